// Vite serves web/ and lets pages import the project's src/, test/ and shaders/.
import { defineConfig } from "vite";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));
const repo = fileURLToPath(new URL("..", import.meta.url));

export default defineConfig({
  root,
  // Relative asset URLs: dist/ works from any static host and any sub-path (e.g. GitHub Pages).
  base: "./",
  server: { host: "127.0.0.1", fs: { allow: [repo] } },
  preview: { host: "127.0.0.1" },
  worker: { format: "es" },
  build: {
    outDir: fileURLToPath(new URL("../dist", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    rollupOptions: {
      input: {
        main: fileURLToPath(new URL("./index.html", import.meta.url)),
        kernels: fileURLToPath(new URL("./test/kernels.html", import.meta.url)),
      },
    },
  },
});

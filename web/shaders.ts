// Bundles every shaders/*.wgsl as text (Vite ?raw imports) and registers them with the GPU
// layer, so workers never fetch shader files at run time.
import { registerShaders } from "../src/gpu/shaders.ts";

const sources = import.meta.glob("../shaders/*.wgsl", {
  query: "?raw",
  import: "default",
  eager: true,
}) as Record<string, string>;
registerShaders(sources);

export const shaderNames = Object.keys(sources).map((p) =>
  p.replace(/^.*\//, "").replace(/\.wgsl$/, "")
);

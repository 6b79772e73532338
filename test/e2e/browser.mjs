// Shared by the browser tests: a Vite dev server on 127.0.0.1 and Debian's Chromium with
// WebGPU on (SwiftShader where there is no GPU), driven by playwright-core.
import { createServer } from "vite";
import { chromium } from "playwright-core";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const CHROMIUM_ARGS = [
  "--enable-unsafe-webgpu",
  "--enable-features=Vulkan",
  "--no-sandbox",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

export function chromiumPath() {
  const candidates = [
    process.env.CHROMIUM_PATH,
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
  ];
  const found = candidates.find((p) => p && existsSync(p));
  if (!found) {
    throw new Error(
      "No Chromium found. Install it (Debian/Ubuntu: apt-get install -y chromium) or set CHROMIUM_PATH.",
    );
  }
  return found;
}

export async function startVite(plugins = []) {
  const server = await createServer({
    configFile: fileURLToPath(new URL("../../web/vite.config.ts", import.meta.url)),
    // No HMR and no file watching: an edit to a source file while a test runs must not reload
    // the page under it (Vite answers edits of non-HMR modules with a full reload).
    server: { host: "127.0.0.1", port: 0, strictPort: false, hmr: false, watch: null },
    logLevel: "error",
    plugins,
  });
  await server.listen();
  const addr = server.httpServer.address();
  return { server, url: `http://127.0.0.1:${addr.port}` };
}

export async function launchBrowser() {
  return await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: CHROMIUM_ARGS,
  });
}

/**
 * Polls the app's state (`read(page)`: an object with state, step, errors, log) until `pred`
 * holds; throws on page errors, a failed run or the timeout, naming `what`.
 */
export async function waitForApp(page, read, what, pred, timeout, pollMs = 250) {
  const t0 = Date.now();
  for (;;) {
    const a = await read(page);
    if (a.errors.length) {
      throw new Error(`page errors while waiting for ${what}: ${a.errors.join("; ")}`);
    }
    if (pred(a)) return a;
    if (a.state === "failed") {
      throw new Error(`run failed while waiting for ${what}: ${a.log.slice(-3).join(" | ")}`);
    }
    if (Date.now() - t0 > timeout) {
      throw new Error(
        `timed out waiting for ${what}: ${
          JSON.stringify({ state: a.state, step: a.step, log: a.log.slice(-3) })
        }`,
      );
    }
    await page.waitForTimeout(pollMs);
  }
}

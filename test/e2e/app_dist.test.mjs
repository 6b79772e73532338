// The built app (`vite build`) from a plain static file server under a sub-path, as any static
// host would serve it: the page loads, the trainer worker gets WebGPU, and a run gets through its
// first validation (bundled shaders, the bundled warm-start model, the sandbox for tool code).
// Built into a temporary folder, so dist/ is left alone.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";
import { launchBrowser } from "./browser.mjs";

const MIME = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".css": "text/css",
  ".json": "application/json",
  ".wasm": "application/wasm",
};

describe("built app from a static host", { timeout: 300_000 }, () => {
  let out, server, browser, url;
  const errors = [];

  before(async () => {
    out = mkdtempSync(join(tmpdir(), "pettingllms-dist-"));
    await build({
      configFile: fileURLToPath(new URL("../../web/vite.config.ts", import.meta.url)),
      logLevel: "error",
      build: { outDir: out, emptyOutDir: true },
    });
    server = createServer(async (req, res) => {
      const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
      if (!path.startsWith("/app/")) return res.writeHead(404).end();
      const file = join(out, path.slice(5) || "index.html");
      try {
        res.writeHead(200, { "content-type": MIME[extname(file)] ?? "application/octet-stream" })
          .end(await readFile(file));
      } catch {
        res.writeHead(404).end();
      }
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${server.address().port}/app/`;
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    server?.close();
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it("loads and validates a run's policy before training", async () => {
    const page = await browser.newPage();
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(url);
    await page.waitForFunction(() => window.__app?.ready, null, { timeout: 180_000 });
    assert.ok(await page.evaluate(() => window.__app.init.adapter), "no adapter");
    const set = (p, v) => page.fill(`#f-${p.replaceAll(".", "-")}`, String(v));
    await set("run.steps", 2);
    await set("rollout.maxTurns", 1);
    await set("eval.episodes", 2);
    await page.fill("#f-sets", "env.difficulty.maxTurns=1");
    await page.click("#btn-start");
    await page.waitForFunction(
      () =>
        window.__app.evals.length > 0 || window.__app.errors.length > 0 ||
        window.__app.state === "failed",
      null,
      { timeout: 180_000 },
    );
    const a = await page.evaluate(() => ({
      evals: window.__app.evals,
      errors: window.__app.errors,
      charts: window.__app.charts,
    }));
    assert.deepEqual(a.errors, []);
    assert.equal(a.evals[0].step, 0);
    assert.ok(a.charts.success >= 1);
    assert.deepEqual(errors, []);
  });
});

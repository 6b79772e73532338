// The browser app (web/index.html) in headless Chromium (WebGPU on SwiftShader where there is no
// GPU) trains and held-out success rises: the setting of test/rl/rise_test.ts (the built-in warm
// start models/plan_path_tiny, L2 LoRA, one-turn 5×5 Plan-Path, 4 envs × 4 candidates, 12 seeded
// steps, 32 held-out tasks validated before training and after the last step), started from the
// page's form; the validation chart gets both points and the success at the last step is at least
// 3 of 32 tasks above step 0. Kept apart from app.test.mjs so it can be read and timed on its own.
// Part of `npm test`: measured 0.0% -> 18.8% (6 of 32) in 3 min 20 s on SwiftShader here, with the
// CPU adapters' lane kernels (attention, sampling); it took 11.5 min with the workgroup kernels.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { launchBrowser, startVite } from "./browser.mjs";

const OUT = fileURLToPath(new URL("./out/", import.meta.url));
const STEPS = 12;
const EPISODES = 32;

const app = (page) => page.evaluate(() => {
  const a = window.__app;
  return { ready: a.ready, init: a.init, state: a.state, step: a.step, total: a.total, charts: a.charts, evals: a.evals, errors: a.errors, log: a.log };
});

describe("browser app: held-out success rises", { timeout: 1_200_000 }, () => {
  let vite, browser, page;
  const consoleErrors = [];

  before(async () => {
    mkdirSync(OUT, { recursive: true });
    // No HMR: an edit elsewhere in the repo during the long run must not reload the page.
    vite = await startVite([{ name: "no-hmr", config: () => ({ server: { hmr: false, watch: null } }) }]);
    browser = await launchBrowser();
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    page = await context.newPage();
    page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    page.on("pageerror", (e) => consoleErrors.push(String(e)));
    page.on("worker", (w) => w.on("console", (m) => m.type() === "error" && consoleErrors.push(`worker: ${m.text()}`)));
  });

  after(async () => {
    await browser?.close();
    await vite?.server.close();
  });

  it("12 steps of one-turn Plan-Path from the warm start raise held-out success", async () => {
    await page.goto(`${vite.url}/`);
    const t0 = Date.now();
    const secs = () => ((Date.now() - t0) / 1000).toFixed(0);
    for (;;) {
      const a = await app(page);
      if (a.ready) break;
      if (Date.now() - t0 > 60_000) throw new Error("the app did not get ready");
      await page.waitForTimeout(200);
    }
    const set = (path, v) => page.fill(`#f-${path.replaceAll(".", "-")}`, String(v));
    // The form starts from configs/quickstart.json for the built-in warm start; as rise_test.ts.
    await set("run.steps", STEPS);
    await set("rollout.envsPerStep", 4);
    await set("rollout.k", 4);
    await set("rollout.maxTurns", 1);
    await set("eval.everySteps", STEPS);
    await set("eval.episodes", EPISODES);
    await set("run.checkpointEvery", 0);
    // (quickstart.json already has size 5 and wall density 0.2; the box splits on commas.)
    await page.fill("#f-sets", "env.difficulty.maxTurns=1");
    assert.equal((await page.textContent("#f-errors")).trim(), "", "the form reports config errors");
    await page.click("#btn-start");

    const start = Date.now();
    let lastStep = -1, lastEvals = 0;
    let a;
    for (;;) {
      a = await app(page);
      if (a.errors.length) throw new Error(`page errors: ${a.errors.join("; ")}`);
      if (a.state === "failed") throw new Error(`run failed: ${a.log.slice(-3).join(" | ")}`);
      if (a.step !== lastStep) {
        console.log(`# step ${a.step}/${a.total} at ${((Date.now() - start) / 1000).toFixed(0)} s`);
        lastStep = a.step;
      }
      if (a.evals.length !== lastEvals) {
        for (const e of a.evals.slice(lastEvals)) console.log(`# validation at step ${e.step}: ${(e.successRate * 100).toFixed(1)}% at ${((Date.now() - start) / 1000).toFixed(0)} s`);
        lastEvals = a.evals.length;
      }
      if (a.state === "finished") break;
      if (Date.now() - start > 1_000_000) throw new Error(`timed out: ${JSON.stringify({ state: a.state, step: a.step, log: a.log.slice(-3) })}`);
      await page.waitForTimeout(500);
    }
    console.log(`# finished after ${secs()} s (run ${((Date.now() - start) / 1000).toFixed(0)} s)`);
    await page.screenshot({ path: `${OUT}/app-rise.png`, fullPage: true });
    assert.equal(a.step, STEPS);
    assert.deepEqual(a.evals.map((e) => e.step), [0, STEPS], "validation before training and at the end");
    assert.ok(a.charts.success >= STEPS + 2, `success chart: ${a.charts.success} points`);
    const [first, last] = a.evals.map((e) => e.successRate);
    console.log(`# held-out success: step 0 ${(first * 100).toFixed(1)}% -> step ${STEPS} ${(last * 100).toFixed(1)}% (${EPISODES} tasks)`);
    assert.ok(last - first >= 3 / EPISODES - 1e-9, `held-out success did not rise clearly: ${first} -> ${last}`);
    assert.deepEqual(consoleErrors, []);
  });
});

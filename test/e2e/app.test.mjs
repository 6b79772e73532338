// The browser app (web/index.html) in headless Chromium (WebGPU on SwiftShader where there is no
// GPU): load; start the quickstart's rising setting from the page's form (the built-in warm start
// models/plan_path_warm, L2 LoRA, one-turn 5×5 Plan-Path, 4 envs × 4 candidates, 12 seeded steps,
// 32 held-out tasks validated before training and after the last step, as test/rl/rise_test.ts);
// pause after step 1 and use the demos on the live policy (tic-tac-toe stays off for a Plan-Path
// policy); see the charts and the rollout viewer fill in; reload mid-run (the page asks first) and
// resume from the OPFS checkpoint at the right step through the banner's offer; lose the GPU
// device during the next step and see training resume from the last checkpoint; finish, and
// held-out success has risen by at least 3 of 32 tasks; a page without WebGPU says what to do;
// no console errors anywhere. One run carries every check: on SwiftShader each run costs minutes.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { launchBrowser, startVite, waitForApp } from "./browser.mjs";

const OUT = fileURLToPath(new URL("./out/", import.meta.url));
const STEPS = 12;
const EPISODES = 32;

const app = (page) =>
  page.evaluate(() => {
    const a = window.__app;
    return {
      ready: a.ready,
      init: a.init,
      state: a.state,
      step: a.step,
      total: a.total,
      runId: a.runId,
      resumedFrom: a.resumedFrom,
      charts: a.charts,
      rolloutSteps: a.rolloutSteps,
      evals: a.evals,
      errors: a.errors,
      deviceLost: a.deviceLost,
      log: a.log,
    };
  });

const waitFor = (page, what, pred, timeout) => waitForApp(page, app, what, pred, timeout, 500);

describe("browser app", { timeout: 1_500_000 }, () => {
  let vite, browser, context, page;
  const consoleErrors = [];
  const t0 = Date.now();
  const secs = () => ((Date.now() - t0) / 1000).toFixed(0);

  const watch = (p) => {
    p.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    p.on("pageerror", (e) => consoleErrors.push(String(e)));
    p.on(
      "worker",
      (w) =>
        w.on("console", (m) => m.type() === "error" && consoleErrors.push(`worker: ${m.text()}`)),
    );
  };

  before(async () => {
    mkdirSync(OUT, { recursive: true });
    // No HMR: an edit elsewhere in the repo during the long run must not reload the page.
    vite = await startVite([{
      name: "no-hmr",
      config: () => ({ server: { hmr: false, watch: null } }),
    }]);
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    page = await context.newPage();
    watch(page);
  });

  after(async () => {
    await browser?.close();
    await vite?.server.close();
  });

  it("loads with a WebGPU adapter in the trainer worker and OPFS storage", async () => {
    await page.goto(`${vite.url}/`);
    const a = await waitFor(page, "the app", (x) => x.ready, 180_000);
    assert.equal(a.init.error, null);
    assert.ok(a.init.adapter, "no adapter");
    assert.match(a.init.runtime, /^worker/);
    assert.equal(a.init.opfs, true);
    console.log(`# adapter: ${a.init.adapter}`);
  });

  it("starts the rising run; charts, validation and the rollout viewer fill in", async () => {
    const set = (path, v) => page.fill(`#f-${path.replaceAll(".", "-")}`, String(v));
    // The form starts from configs/quickstart.json (size 5, wall density 0.2): as rise_test.ts.
    await set("run.steps", STEPS);
    await set("rollout.envsPerStep", 4);
    await set("rollout.k", 4);
    await set("rollout.maxTurns", 1);
    await set("eval.everySteps", STEPS);
    await set("eval.episodes", EPISODES);
    await set("run.checkpointEvery", 1);
    await page.fill("#f-sets", "env.difficulty.maxTurns=1");
    assert.equal(
      (await page.textContent("#f-errors")).trim(),
      "",
      "the form reports config errors",
    );
    await page.click("#btn-start");
    await waitFor(page, "step 1", (x) => x.step >= 1, 600_000);
    // Pause: the loop stops after the step (with a checkpoint); the demos use the policy meanwhile.
    await page.click("#btn-pause");
    await waitFor(page, "paused", (x) => x.state === "paused", 120_000);
    await page.click("summary:has-text('Sampling explorer')");
    await page.click("#sampling .se-load");
    await page.waitForSelector("#sampling .dist-row", { timeout: 90_000 });
    assert.match(await page.textContent("#sampling .se-summary"), /tokens can be drawn/);
    await page.fill("#sampling .se-K", "3");
    await page.dispatchEvent("#sampling .se-K", "input");
    assert.equal(
      await page.$$eval("#sampling .dist-row.kept", (r) => r.length),
      3,
      "top-k 3 keeps 3 tokens",
    );
    await page.click("#grpo .gx-measure");
    await page.waitForSelector("#grpo .gx-summary", { timeout: 90_000 });
    // Tic-tac-toe wants a tic-tac-toe policy: with this Plan-Path run it is off, and says why.
    await page.click("summary:has-text('tic-tac-toe')");
    assert.equal(await page.$eval("#ttt .ttt-new", (b) => b.disabled), true);
    assert.match(await page.textContent("#ttt .gate-note"), /trains plan_path_v1, not tic-tac-toe/);
    await page.click("#btn-resume");
    const a = await waitFor(
      page,
      "step 2",
      (x) => x.step >= 2 && x.rolloutSteps.includes(2),
      400_000,
    );
    console.log(`# step 2 after ${secs()} s`);
    assert.ok(
      a.charts.reward >= 2 && a.charts.loss >= 2 && a.charts.entropy >= 2 && a.charts.tps >= 2,
      JSON.stringify(a.charts),
    );
    assert.ok(
      a.charts.success >= 3,
      `success chart: ${a.charts.success} points (train steps + the step-0 validation)`,
    );
    assert.deepEqual(a.evals.map((e) => e.step), [0], "validation before training");
    // The rollout viewer: a board and the group's candidates with rewards and advantages.
    await page.waitForSelector("#viewer .grid-board .cell");
    const rows = await page.$$eval(
      "#viewer table.cands tr",
      (trs) => trs.slice(1).map((tr) => [...tr.children].map((td) => td.textContent)),
    );
    assert.equal(rows.length, 4, "K = 4 candidates");
    for (const r of rows) {
      assert.match(r[2], /^[+-]\d/, `reward cell: ${r[2]}`);
      assert.match(r[3], /^[+-]\d/, `advantage cell: ${r[3]}`);
    }
    assert.equal(rows.filter((r) => r[4] === "branch taken").length, 1);
    assert.ok(await page.$eval("#charts .chart[data-chart=reward] canvas", (c) => c.width > 0));
  });

  it("reloads mid-run, resumes from the OPFS checkpoint, survives a device loss; success rises", async () => {
    await page.screenshot({ path: `${OUT}/app-running.png`, fullPage: true });
    const before = await app(page);
    const runId = before.runId;
    // Mid-step, the page asks before it unloads (Playwright would dismiss it, cancelling the reload).
    const dialogs = [];
    page.once("dialog", (d) => {
      dialogs.push(d.type());
      void d.accept();
    });
    await page.reload();
    assert.deepEqual(dialogs, ["beforeunload"]);
    await waitFor(page, "the app after reload", (x) => x.ready, 180_000);
    // The banner offers the interrupted run.
    const btn = await page.waitForSelector(`#banner .offer-resume[data-run="${runId}"]`);
    const label = await btn.textContent();
    const m = label.match(/step (\d+)/);
    assert.ok(m && Number(m[1]) >= 2, `resume button: ${label}`);
    const from = Number(m[1]);
    await btn.click();
    const a = await waitFor(page, "the resumed run", (x) => x.resumedFrom !== null, 180_000);
    assert.equal(a.resumedFrom, from);
    assert.equal(a.runId, runId);
    // The charts came back from metrics.jsonl in OPFS before any new step.
    assert.ok(a.charts.reward >= from, JSON.stringify(a.charts));
    if (from < STEPS) {
      // Lose the device during the next step: training resumes from the last checkpoint.
      await page.waitForTimeout(3000);
      // GPUDevice.destroy() in the trainer worker: the device is lost as after a driver reset.
      await page.evaluate(() => window.__appDebug.loseDevice());
    }
    let lastStep = -1;
    const done = await waitFor(page, "the end of the run", (x) => {
      if (x.step !== lastStep) console.log(`# step ${(lastStep = x.step)}/${STEPS} at ${secs()} s`);
      return x.state === "finished";
    }, 1_000_000);
    console.log(
      `# finished after ${secs()} s (resumed from step ${from}, device losses ${done.deviceLost})`,
    );
    assert.equal(done.step, STEPS);
    assert.deepEqual(
      done.evals.map((e) => e.step),
      [0, STEPS],
      "validation before training and at the end",
    );
    assert.ok(done.charts.reward >= STEPS, JSON.stringify(done.charts));
    if (from < STEPS) {
      assert.equal(done.deviceLost, 1, "the device loss was reported");
      assert.ok(
        done.log.some((l) => /device rebuilt .*resumed from step-\d+/.test(l)),
        done.log.slice(-6).join(" | "),
      );
    }
    await page.screenshot({ path: `${OUT}/app.png`, fullPage: true });
    const [first, last] = done.evals.map((e) => e.successRate);
    console.log(
      `# held-out success: step 0 ${(first * 100).toFixed(1)}% -> step ${STEPS} ${
        (last * 100).toFixed(1)
      }% (${EPISODES} tasks)`,
    );
    assert.ok(done.charts.success >= STEPS + 2, `success chart: ${done.charts.success} points`);
    assert.ok(
      last - first >= 3 / EPISODES - 1e-9,
      `held-out success did not rise clearly: ${first} -> ${last}`,
    );
  });

  it("says what to do where there is no WebGPU", async () => {
    const p = await context.newPage();
    watch(p);
    await p.addInitScript(() => {
      Object.defineProperty(Navigator.prototype, "gpu", {
        get: () => undefined,
        configurable: true,
      });
    });
    await p.goto(`${vite.url}/`);
    await p.waitForFunction(() => window.__app?.ready, null, { timeout: 180_000 });
    const text = await p.textContent("#banner");
    assert.match(text, /No WebGPU/);
    assert.match(text, /enable-unsafe-webgpu/);
    assert.equal(await p.$eval("#btn-start", (b) => b.disabled), true);
    await p.close();
  });

  it("the pages logged no console errors", () => {
    assert.deepEqual(consoleErrors, []);
  });
});

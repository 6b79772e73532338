// The browser app as a learner sees it, in headless Chromium at 1400×900 and on a 390×844 phone:
// the run bar (controls, status, phase) in view without scrolling and still in view when the
// charts are scrolled to; a phase reported by the worker within 2 s of Start; the browser asked
// before the tab closes mid-step; after the first step a checkpoint, and after a reload the offer
// to resume the interrupted run from it; the demos disabled, with a reason, before any policy;
// no horizontal overflow on the phone. Screenshots of each view go to test/e2e/out/ (committed).
// One tiny run (1 env × 2 candidates, one turn, 1 validation episode) keeps this short.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { launchBrowser, startVite, waitForApp } from "./browser.mjs";

const OUT = fileURLToPath(new URL("./out/", import.meta.url));
// Long enough that the run is still mid-step when the test reloads the tab, whatever the load
// (with 3 steps it could end first, and no warning came: a CI flake); no checkpoint after the
// first step's, so the reload offers step 1.
const SMALL = {
  "run.steps": 100,
  "run.checkpointEvery": 100,
  "rollout.envsPerStep": 1,
  "rollout.k": 2,
  "rollout.maxTurns": 1,
  "eval.everySteps": 0,
  "eval.episodes": 1,
  "run.seed": 3,
};

const app = (page) =>
  page.evaluate(() => {
    const a = window.__app;
    return {
      ready: a.ready,
      state: a.state,
      step: a.step,
      phase: a.phase,
      phases: a.phases,
      errors: a.errors,
      log: a.log,
      runId: a.runId,
    };
  });

const waitFor = (page, what, pred, timeout) => waitForApp(page, app, what, pred, timeout, 250);

/** Scrolls so that `sel` sits just under the sticky run bar. */
async function scrollUnderBar(page, sel) {
  await page.evaluate((s) => {
    const bar = document.querySelector(".sticky").getBoundingClientRect().height;
    scrollTo(0, document.querySelector(s).getBoundingClientRect().top + scrollY - bar - 8);
  }, sel);
}

/** The element's box lies inside the viewport (nothing of it needs scrolling to see). */
async function inView(page, sel) {
  const [box, vp] = [await page.locator(sel).boundingBox(), page.viewportSize()];
  assert.ok(box, `${sel} is not displayed`);
  assert.ok(
    box.y >= 0 && box.y + box.height <= vp.height && box.x >= 0 && box.x + box.width <= vp.width,
    `${sel} is out of view: ${JSON.stringify(box)} in ${vp.width}×${vp.height}`,
  );
}

describe("browser app layout and run lifecycle", { timeout: 400_000 }, () => {
  let vite, browser;
  const consoleErrors = [];
  const watch = (p) => {
    p.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    p.on("pageerror", (e) => consoleErrors.push(String(e)));
  };

  before(async () => {
    mkdirSync(OUT, { recursive: true });
    vite = await startVite();
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await vite?.server.close();
  });

  it("1400×900: run bar in view; a phase within 2 s; a checkpoint after step 1; a reload offers to resume it", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    watch(page);
    await page.goto(`${vite.url}/`);
    await waitFor(page, "the app", (x) => x.ready, 180_000);
    for (const sel of ["#btn-start", "#btn-pause", "#btn-stop", "#state", "#progressbar"]) {
      await inView(page, sel);
    }
    assert.equal(
      await page.$eval("#state", (e) => e.closest("[aria-live=polite]")?.getAttribute("role")),
      "status",
      "the status is not an aria-live region",
    );
    // Tab order: the teaching-mode toggle in the header, then Start.
    const stops = [];
    for (let i = 0; i < 2; i++) {
      await page.keyboard.press("Tab");
      stops.push(await page.evaluate(() => document.activeElement?.id));
    }
    assert.deepEqual(stops, ["btn-teach", "btn-start"]);
    assert.equal(await page.getAttribute("#progressbar", "role"), "progressbar");
    // Demos wait for a policy, and say so.
    assert.equal(await page.$eval("#sampling .se-load", (b) => b.disabled), true);
    assert.match(await page.textContent("#ttt .gate-note"), /tic-tac-toe run/);
    // The task's own warm start follows the task; an edited field survives the change.
    await page.fill("#f-run-steps", "7");
    await page.selectOption("#f-task", "tic_tac_toe_v1");
    assert.equal(await page.inputValue("#f-model"), "builtin:tic_tac_toe_warm");
    assert.equal(await page.inputValue("#f-run-steps"), "7");
    await page.selectOption("#f-task", "plan_path_v1");
    assert.equal(await page.inputValue("#f-model"), "builtin:plan_path_warm");
    await page.fill("#f-rollout-k", "1");
    assert.match(
      await page.textContent("#f-errors"),
      /Candidates per group \(K\)/,
      "errors name the field's label",
    );
    await page.screenshot({ path: `${OUT}/desktop-setup.png` });

    for (const [p, v] of Object.entries(SMALL)) {
      await page.fill(`#f-${p.replaceAll(".", "-")}`, String(v));
    }
    await page.fill("#f-sets", "env.difficulty.maxTurns=1");
    assert.equal((await page.textContent("#f-errors")).trim(), "");
    const t0 = Date.now();
    await page.click("#btn-start");
    await page.waitForFunction(
      () => document.querySelector("#rb-phase").textContent.trim() !== "",
      null,
      { timeout: 20_000 },
    );
    console.log(
      `# first phase "${await page.textContent("#rb-phase")}" shown after ${Date.now() - t0} ms`,
    );
    await inView(page, "#rb-phase");
    const a1 = await waitFor(
      page,
      "step 1 and its checkpoint",
      (x) => x.log.some((l) => /checkpoint step-1 /.test(l)),
      300_000,
    );
    const seen = a1.phases.map((p) => p.phase);
    for (const p of ["loading", "compiling", "validating", "rollout", "update", "saving"]) {
      assert.ok(seen.includes(p), `phase ${p} never reported: ${seen}`);
    }
    const t = a1.phases.map((p, i) =>
      `${p.phase} ${
        (((a1.phases[i + 1]?.at ?? p.at) - p.at) / 1000).toFixed(1)
      } s (${p.pipelines} pipelines)`
    );
    console.log(
      `# step 1 checkpointed after ${((Date.now() - t0) / 1000).toFixed(0)} s: ${t.join(" → ")}`,
    );
    // Scrolled to the charts, the run bar is still in view (sticky).
    await scrollUnderBar(page, "#h-training");
    await inView(page, "#state");
    await inView(page, "#btn-stop");
    assert.match(
      await page.getAttribute("#charts [data-chart=success] [role=img]", "aria-label"),
      /Success rate .*held-out/,
    );
    await page.screenshot({ path: `${OUT}/desktop-training.png` });
    // The rollout viewer shows the tool → output → plan hand-off (Plan-Path has a tool agent).
    assert.ok(
      await page.locator("#viewer .handoff pre").count() >= 1,
      "no tool hand-off in the rollout viewer",
    );
    assert.doesNotMatch(await page.textContent("#viewer"), /<eos>/);
    await scrollUnderBar(page, "#viewer");
    await page.screenshot({ path: `${OUT}/desktop-rollouts.png` });
    // Teaching mode: the GRPO explainer and the sampling explorer first, open.
    await page.click("#btn-teach");
    await scrollUnderBar(page, "#h-teach");
    await inView(page, "#grpo .gx-measure");
    await page.screenshot({ path: `${OUT}/desktop-teaching.png` });
    await page.click("#btn-teach");
    assert.equal(
      await page.$eval("#sampling .se-load", (b) => b.disabled),
      false,
      "the sampling explorer is enabled once a policy is loaded",
    );

    // Reloading mid-step: the browser asks first; after it, the interrupted run is offered.
    const dialogs = [];
    page.on("dialog", (d) => {
      dialogs.push(d.type());
      void d.accept();
    });
    const runId = a1.runId;
    await page.reload();
    assert.deepEqual(dialogs, ["beforeunload"], "no warning before the tab closed mid-step");
    await waitFor(page, "the app after reload", (x) => x.ready, 180_000);
    const offer = page.locator(`#banner .offer-resume[data-run="${runId}"]`);
    await offer.waitFor({ timeout: 30_000 });
    assert.match(await offer.textContent(), /Resume the interrupted run from step 1/);
    assert.match(await page.textContent(`.run[data-run="${runId}"]`), /interrupted/);
    // Its curves are shown (dashed) until a run starts.
    await page.waitForFunction((id) => window.__app.overlays.includes(id), runId, {
      timeout: 30_000,
    });
    await inView(page, "#banner .offer-resume");
    await page.screenshot({ path: `${OUT}/desktop-resume-offer.png` });
    await page.close();
  });

  it("390×844: no horizontal overflow; the run bar fits", async () => {
    const page = await browser.newPage({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
      deviceScaleFactor: 1,
    });
    watch(page);
    await page.goto(`${vite.url}/`);
    await waitFor(page, "the app", (x) => x.ready, 180_000);
    for (const sel of ["#btn-start", "#state"]) await inView(page, sel);
    const wide = await page.evaluate(() => {
      const w = document.documentElement.clientWidth;
      return {
        scroll: document.documentElement.scrollWidth,
        w,
        over: [...document.querySelectorAll("body *")].filter((e) =>
          e.getBoundingClientRect().right > w + 1 && e.getClientRects().length
        ).map((e) =>
          e.tagName + (e.id ? `#${e.id}` : "") +
          (e.className && typeof e.className === "string" ? `.${e.className.split(" ")[0]}` : "")
        ).slice(0, 8),
      };
    });
    assert.ok(
      wide.scroll <= 390,
      `the page is ${wide.scroll} px wide at 390 px: ${wide.over.join(", ")}`,
    );
    await page.screenshot({ path: `${OUT}/phone-top.png` });
    await scrollUnderBar(page, "#h-training");
    await inView(page, "#state");
    await page.screenshot({ path: `${OUT}/phone-charts.png` });
    await page.close();
  });

  it("logged no console errors", () => {
    assert.deepEqual(consoleErrors, []);
  });
});

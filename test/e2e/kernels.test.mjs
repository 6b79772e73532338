// The kernel test set inside a Web Worker in headless Chromium, compared with the float64
// CPU reference, one subtest per case.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { launchBrowser, startVite } from "./browser.mjs";

describe("kernels in a Chromium Web Worker", { timeout: 600_000 }, () => {
  let vite, browser, report;
  const consoleErrors = [];

  before(async () => {
    vite = await startVite();
    browser = await launchBrowser();
    const page = await browser.newPage();
    page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    page.on("pageerror", (e) => consoleErrors.push(String(e)));
    await page.goto(`${vite.url}/test/kernels.html`);
    await page.waitForFunction(() => window.__report !== undefined, null, { timeout: 540_000 });
    report = await page.evaluate(() => window.__report);
  });

  after(async () => {
    await browser?.close();
    await vite?.server.close();
  });

  it("gets a WebGPU adapter inside a worker", () => {
    assert.equal(report.error, undefined, report.error);
    assert.equal(report.runtime, "worker");
    assert.ok(report.results.length > 100, `only ${report.results?.length} cases ran`);
    console.log(`# adapter: ${report.adapter}`);
  });

  it("runs the split-K subgroup twins where the adapter has subgroups", (t) => {
    const sg = report.results.filter((r) => r.name.includes("subgroups]"));
    console.log(`# subgroups: ${report.subgroups}, ${sg.length} subgroup cases`);
    if (!report.subgroups) {
      t.skip("this adapter has no subgroups (or no WGSL subgroup_id)");
      return;
    }
    assert.ok(sg.length >= 40, `only ${sg.length} subgroup cases ran`);
    assert.equal(
      report.subgroupsWhenDisabled,
      false,
      'disableFeatures: ["subgroups"] turns them off',
    );
  });

  it("every kernel case matches the reference", async (t) => {
    for (const r of report.results) {
      await t.test(
        r.name,
        () => assert.ok(r.ok, `${r.name}: ${r.error ?? `error ${r.ratio}× tolerance`}`),
      );
    }
    // Where the page's time goes (CI time is a budget): the slowest cases, four in flight at once.
    const slow = [...report.results].sort((a, b) => (b.ms ?? 0) - (a.ms ?? 0)).slice(0, 8);
    console.log(
      `# slowest: ${slow.map((r) => `${r.name} ${(r.ms / 1000).toFixed(1)} s`).join("; ")}`,
    );
  });

  it("the page logged no console errors", () => {
    assert.deepEqual(consoleErrors, []);
  });
});

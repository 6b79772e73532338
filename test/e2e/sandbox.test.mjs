// The sandbox's hostile-code battery (test/sandbox/battery.ts) in headless Chromium: every
// program contained by the browser host (blob Workers with network/storage globals removed),
// the page healthy afterwards, and no request reaching the probe URL.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { launchBrowser, startVite } from "./browser.mjs";

describe("sandbox in a Chromium page", { timeout: 300_000 }, () => {
  let vite, browser, report;
  let probeHits = 0;
  const pageErrors = [];

  before(async () => {
    const probe = {
      name: "probe",
      configureServer(server) {
        server.middlewares.use("/__probe", (_req, res) => {
          probeHits++;
          res.end("reached");
        });
      },
    };
    vite = await startVite([probe]);
    browser = await launchBrowser();
    const page = await browser.newPage();
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    await page.goto(`${vite.url}/test/sandbox.html`);
    await page.waitForFunction(() => window.__report !== undefined, null, { timeout: 280_000 });
    report = await page.evaluate(() => window.__report);
  });

  after(async () => {
    await browser?.close();
    await vite?.server.close();
  });

  it("runs the battery", () => {
    assert.equal(report.error, undefined, report.error);
    assert.ok(report.results.length >= 20, `only ${report.results?.length} programs`);
  });

  it("contains every hostile program", async (t) => {
    for (const r of report.results) {
      await t.test(r.name, () => assert.ok(r.contained, `${r.name}: ${r.detail}`));
    }
  });

  it("leaves the page healthy and the network untouched", () => {
    assert.ok(report.hostHealthy, report.health.join("; "));
    assert.equal(probeHits, 0, "a sandboxed program reached the probe URL");
    assert.deepEqual(pageErrors, []);
  });
});

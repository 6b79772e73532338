// The hostile-code battery in Deno, with real bait (bait.ts): a probe server, a secret file,
// module and environment variable, and a marker file a subprocess would create.

import { assert } from "../assert.ts";
import { SandboxPool } from "../../src/sandbox/pool.ts";
import { exists, makeBait } from "./bait.ts";
import { PROGRAMS, runHostileBattery } from "./battery.ts";

Deno.test("sandbox battery: every hostile program is contained and the host stays healthy", async () => {
  assert(
    PROGRAMS.length + 1 >= 20,
    `the battery must hold at least 20 programs (${PROGRAMS.length + 1})`,
  );
  const bait = await makeBait();
  const pool = new SandboxPool({ concurrency: 2 });
  try {
    const report = await runHostileBattery({
      run: (code, options) => pool.run(code, options),
      probeUrl: bait.probeUrl,
      probeHits: bait.hits,
      secretFile: bait.secretFile,
      localModule: bait.localModule,
      secretEnv: bait.secretEnv,
      secret: bait.secret,
      markerFile: bait.markerFile,
      markerExists: () => exists(bait.markerFile),
    });
    const failures = report.results.filter((r) => !r.contained).map((r) =>
      `${r.name}: ${r.detail}`
    );
    assert(failures.length === 0, `not contained:\n  ${failures.join("\n  ")}`);
    assert(report.results.every((r) => r.result !== null), "no program may be skipped in Deno");
    assert(report.hostHealthy, `host unhealthy: ${report.health.join("; ")}`);
    // The bait itself works, so "no hit" and "no secret" mean something.
    const res = await fetch(bait.probeUrl);
    assert(
      (await res.text()).includes(bait.secret) && bait.hits() === 1,
      "the probe server must answer",
    );
    assert(
      Deno.readTextFileSync(bait.secretFile) === bait.secret,
      "the secret file must be readable here",
    );
    assert(Deno.env.get(bait.secretEnv) === bait.secret, "the secret variable must be set here");
  } finally {
    await pool.close();
    await bait.close();
  }
});

// `npx deno task demo`: runs the kernel set on this machine's WebGPU adapter, checks each against
// its float64 reference, and prints what ran where, with timings.

import { Gpu } from "../gpu/mod.ts";
import { createOps } from "../ops/mod.ts";
import { kernelCases } from "../../test/ops/cases.ts";
import { runtimeDescription } from "../runtime.ts";
import { seededValues } from "../ops/reference.ts";
import { defineCli, parseArgsOrExit, runMain } from "./cli_args.ts";

export const DEMO_CLI = defineCli({
  command: "npx deno task demo",
  summary:
    "Every kernel checked against its float64 reference on this machine's WebGPU adapter, then matmul timings (exit 1 on a mismatch).",
  flags: {},
});
parseArgsOrExit(DEMO_CLI);

// errors (no adapter, device lost) as one plain line, exit 1, not Deno's coloured uncaught-error report
await runMain(async () => {
  const gpu = await Gpu.create();
  console.log(`runtime: ${runtimeDescription()}`);
  console.log(`adapter: ${gpu.describe()}`);
  const ops = await createOps(gpu);

  const cases = kernelCases(false);
  let ok = 0;
  const t0 = performance.now();
  for (const c of cases) {
    const ratio = await c.run(gpu, ops);
    if (ratio <= 1) ok++;
    else console.log(`  MISMATCH ${c.name}: ${ratio.toFixed(2)}× tolerance`);
  }
  console.log(
    `kernels: ${ok}/${cases.length} cases match the float64 reference (${
      ((performance.now() - t0) / 1000).toFixed(1)
    } s)`,
  );

  for (const n of [256, 512]) {
    for (const form of ["nn", "nt", "tn"] as const) {
      const s = { form, M: n, N: n, K: n };
      const A = gpu.upload(seededValues(n * n, 1)),
        B = gpu.upload(seededValues(n * n, 2)),
        C = gpu.zeros(n * n);
      const reps = 4;
      const rec0 = gpu.recorder();
      ops.matmul.encode(rec0, s, A, B, C);
      rec0.submit();
      await gpu.sync();
      const t = performance.now();
      const rec = gpu.recorder();
      for (let i = 0; i < reps; i++) ops.matmul.encode(rec, s, A, B, C);
      rec.submit();
      await gpu.sync();
      const ms = (performance.now() - t) / reps;
      console.log(
        `matmul ${form} ${n}³ with ${ops.matmul.variantFor(s).name}: ${
          (2 * n ** 3 / ms / 1e6).toFixed(2)
        } GFLOPS`,
      );
      [A, B, C].forEach((b) => b.destroy());
    }
  }
  gpu.destroy();
  return ok === cases.length ? 0 : 1;
});

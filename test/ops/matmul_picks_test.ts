// Which matmul kernel runs where: driver picks over class picks, the shape buckets a model can
// reach, and a shape whose bucket was not compiled running a compiled stand-in correctly.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import {
  bucketsForShapes,
  findTextureVariant,
  findVariant,
  Matmul,
  type MatmulForm,
  type MatmulShape,
  shapeBucket,
  TEXTURE_DEFAULT_PICKS,
  textureBucket,
  textureBuckets,
  variantSupports,
} from "../../src/ops/matmul.ts";
import {
  MATMUL_DRIVER_TUNING,
  MATMUL_PICKS_ENV,
  MATMUL_TUNING,
  matmulPicks,
} from "../../src/ops/tuning.ts";
import { matmulRef, seededValues, toleranceRatio } from "../../src/ops/reference.ts";
import { foldsMatchReference, groupedEqualsSingle } from "./group_cases.ts";

const info = (description: string, architecture = "", adapterClass: "cpu" | "gpu" = "cpu") => ({
  vendor: "",
  architecture,
  device: "",
  description,
  isFallback: false,
  adapterClass,
});

Deno.test("matmulPicks: llvmpipe's and SwiftShader's driver picks override the CPU class's, nothing else does", () => {
  const llvmpipe = matmulPicks(info("llvmpipe (LLVM 15.0.6, 256 bits)"));
  for (const form of ["nn", "nt", "tn"]) {
    assertEquals(llvmpipe[`${form}:square`], "r32c16_wg8x1");
  }
  assertEquals(llvmpipe["nn:small"], "r16c8_wg8x1");
  assertEquals(llvmpipe["nt:skinny"], "r8c16_wg8x1");
  assertEquals(llvmpipe["nt:skinny16"], "r16c16_wg8x1");
  assertEquals(llvmpipe["nt:skinny32"], "r32c16_wg8x1");
  assertEquals(llvmpipe["nn:skinny"], MATMUL_TUNING.cpu["nn:skinny"]);
  // SwiftShader (Chrome's CPU adapter reports it as the architecture): the tuner's picks.
  assertEquals(matmulPicks(info("", "swiftshader")), {
    ...MATMUL_TUNING.cpu,
    "nt:vector": "r8c8_wg8x1",
    "nt:skinny": "r16c8_wg8x1",
    "nt:small": "r16c8_wg8x1",
    "nn:small": "r16c8_wg8x1",
  });
  assertEquals(matmulPicks(info("some other software rasterizer")), MATMUL_TUNING.cpu);
  // A CPU adapter forced to the GPU class (the lab's seam) gets the GPU picks, untouched.
  assertEquals(matmulPicks(info("llvmpipe (LLVM 15.0.6, 256 bits)", "", "gpu")), MATMUL_TUNING.gpu);
});

Deno.test("every pick names a known variant that computes its form", () => {
  const tables = [...Object.values(MATMUL_TUNING), ...MATMUL_DRIVER_TUNING.map((d) => d.picks)];
  for (const picks of tables) {
    for (const [key, name] of Object.entries(picks)) {
      if (key.startsWith("ntx:")) {
        findTextureVariant(name); // texture-form picks name a variant with a texture-form entry
        continue;
      }
      const form = key.split(":")[0] as MatmulForm;
      // An aligned shape every kind supports in the forms it computes.
      assert(
        variantSupports(findVariant(name), { form, M: 8, N: 8, K: 8 }),
        `pick ${key} = ${name} cannot compute ${form}`,
      );
    }
  }
  assertEquals(variantSupports(findVariant("sk_r1_wg64"), { form: "nn", M: 1, N: 8, K: 8 }), false);
  // Split-K puts N/4 workgroups along x: Qwen's 151936-word LM head fits 65535, 262144 does not.
  const sk = findVariant("sk_r1_wg32");
  assertEquals(variantSupports(sk, { form: "nt", M: 1, N: 151936, K: 64 }), true);
  assertEquals(variantSupports(sk, { form: "nt", M: 1, N: 262144, K: 64 }), false);
  for (const name of Object.values(TEXTURE_DEFAULT_PICKS)) findTextureVariant(name!);
});

Deno.test("texture-form picks: llvmpipe reads weight textures at 2–32 decode rows; other adapters do not", async () => {
  const llvmpipe = matmulPicks(info("llvmpipe (LLVM 15.0.6, 256 bits)"));
  assertEquals(Object.keys(llvmpipe).filter((k) => k.startsWith("ntx:")), [
    "ntx:vector",
    "ntx:skinny",
    "ntx:skinny16",
    "ntx:skinny32",
  ]);
  assertEquals([1, 2, 4, 5, 15, 16, 24, 25, 32].map(textureBucket), [
    null,
    "vector",
    "vector",
    "skinny",
    "skinny",
    "skinny16",
    "skinny16",
    "skinny32",
    "skinny32",
  ]);
  assertEquals(textureBuckets(6), ["vector", "skinny"]);
  assertEquals(
    Object.keys(matmulPicks(info("", "swiftshader"))).filter((k) => k.startsWith("ntx:")),
    [],
  );
  const gpu = await Gpu.create();
  try {
    const m = await Matmul.create(gpu, {}, ["vector", "skinny"]);
    await m.prepareTextures(["vector", "skinny"], true);
    // Forced (GpuModelOptions.weightTextures: true): every bucket asked for gets a kernel; the
    // rows' own bucket decides, with no stand-in.
    assert(m.canUseTextures(2) && m.canUseTextures(8) && m.canUseTextures(15));
    assertEquals(m.canUseTextures(1), false); // one row keeps the storage form
    // 25–32 rows: llvmpipe picks the same tile as for 8–15, compiled above; elsewhere no pick
    // and none forced.
    assertEquals(m.canUseTextures(25), m.prefersTextures);
    assertEquals(
      m.textureVariantFor(8)?.name,
      m.prefersTextures ? llvmpipe["ntx:skinny"] : TEXTURE_DEFAULT_PICKS.skinny,
    );
    assertEquals(
      m.textureVariantFor(3)?.name,
      m.prefersTextures ? llvmpipe["ntx:vector"] : TEXTURE_DEFAULT_PICKS.vector,
    );
    // Where WGSL cannot read storage textures the texture kernels cannot compile: nothing is
    // prepared, even forced, and every product keeps the storage form.
    assert(
      gpu.readOnlyStorageTextures,
      "this suite's adapters list readonly_and_readwrite_storage_textures",
    );
    // deno-lint-ignore no-explicit-any
    const bare: Gpu = new (Gpu as any)({ ...gpu.ctx, wgslFeatures: new Set<string>() }, gpu);
    assertEquals(bare.readOnlyStorageTextures, false);
    const m2 = await Matmul.create(bare, {}, ["vector", "skinny"]);
    await m2.prepareTextures(["vector", "skinny"], true);
    assertEquals([2, 8, 15].map((r) => m2.canUseTextures(r)), [false, false, false]);
    assertEquals(m2.prefersTextures, false);
  } finally {
    gpu.destroy();
  }
});

Deno.test("shapeBucket: row tiers 1–7, 8–15, 16–24, 25–32, then small or square by M·N", () => {
  const b = (M: number, N = 1024) => shapeBucket({ form: "nt", M, N, K: 512 });
  assertEquals([1, 7, 8, 15, 16, 24, 25, 32].map((m) => b(m)), [
    "vector",
    "vector",
    "skinny",
    "skinny",
    "skinny16",
    "skinny16",
    "skinny32",
    "skinny32",
  ]);
  assertEquals([b(33, 64), b(33, 4096)], ["small", "square"]);
});

Deno.test("bucketsForShapes: a tiny model never reaches the square bucket or the row tiers, a 30M one does", () => {
  const tiny = [[264, 64], [64, 64], [32, 64], [64, 64], [192, 64], [64, 192]];
  assertEquals(bucketsForShapes(256, tiny), ["vector", "skinny", "small"]);
  // Few rows: the weight gradients (Aᵀ·B over the rows) still fall in buckets by the weight shapes.
  assertEquals(bucketsForShapes(4, tiny), ["vector", "skinny", "small"]);
  const small30m = [[264, 512], [512, 512], [256, 512], [1408, 512], [512, 1408]];
  assertEquals(bucketsForShapes(256, small30m), [
    "vector",
    "skinny",
    "skinny16",
    "skinny32",
    "small",
    "square",
  ]);
  assertEquals(bucketsForShapes(16, small30m).includes("skinny32"), false);
  // Decode-only (8 rows): the weight gradients are never run, but their shapes still count.
  assert(bucketsForShapes(8, small30m).includes("square"));
  // Every shape a model can run falls in a returned bucket, or (a tiny model's 16–32 rows) in the
  // skinny bucket that stands in for the row tiers it does not prepare.
  for (const [weights, standin] of [[tiny, true], [small30m, false]] as const) {
    const b = bucketsForShapes(256, weights);
    for (const rows of [1, 7, 8, 16, 24, 32, 33, 256]) {
      for (const [o, i] of weights) {
        for (
          const s of [{ form: "nt", M: rows, N: o, K: i }, { form: "nn", M: rows, N: i, K: o }, {
            form: "tn",
            M: o,
            N: i,
            K: rows,
          }] as MatmulShape[]
        ) {
          const want = shapeBucket(s);
          const tier = want === "skinny16" || want === "skinny32";
          assert(
            b.includes(standin && tier ? "skinny" : want),
            `${JSON.stringify(s)} → ${want} not in ${b}`,
          );
          if (standin && tier) assertEquals(b.includes(want), false);
        }
      }
    }
  }
});

Deno.test("a shape whose bucket was not compiled runs a compiled stand-in, correctly", async () => {
  const gpu = await Gpu.create();
  try {
    const m = await Matmul.create(gpu, {}, ["vector", "skinny", "small"]);
    const full = await Matmul.create(gpu);
    for (const form of ["nn", "nt", "tn"] as const) {
      const s: MatmulShape = { form, M: 300, N: 520, K: 36 };
      assertEquals(shapeBucket(s), "square");
      const smallPick = m.variantFor({ form, M: 300, N: 64, K: 36 });
      assertEquals(
        m.variantFor(s).name,
        smallPick.name,
        `${form}: stands in with the small bucket's pick`,
      );
      assertEquals(full.variantFor(s).name, matmulPicks(gpu.ctx.info)[`${form}:square`]);
      const [ra, ca] = form === "tn" ? [s.K, s.M] : [s.M, s.K];
      const [rb, cb] = form === "nt" ? [s.N, s.K] : [s.K, s.N];
      const a = seededValues(ra * ca, 1), b = seededValues(rb * cb, 2);
      for (const mm of [m, full]) {
        const A = gpu.upload(a), B = gpu.upload(b), C = gpu.zeros(s.M * s.N);
        const rec = gpu.recorder();
        mm.encode(rec, s, A, B, C);
        rec.submit();
        const got = await gpu.readFloat32(C, s.M * s.N);
        [A, B, C].forEach((x) => x.destroy());
        const ratio = toleranceRatio(got, matmulRef(s, a, b), 1e-5 * Math.sqrt(s.K) + 1e-6, 1e-4);
        assert(
          ratio <= 1,
          `${form} ${mm === m ? "stand-in" : "square pick"}: error ${ratio.toFixed(2)}× tolerance`,
        );
      }
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("grouped A·Bᵀ (q/k/v, gate/up in one dispatch) equals one matmul per part, bit for bit", async (t) => {
  const gpu = await Gpu.create();
  try {
    // This adapter's picks, and the GPU class's (split-K at 1–15 rows) on any adapter.
    // And with B as half floats (the half-B twins, src/ops/matmul_half.ts).
    for (const classPicks of [null, "gpu"] as const) {
      for (const half of [false, true]) {
        await t.step(
          `${classPicks ?? "this adapter's"} picks${half ? ", half B" : ""}`,
          async () => {
            await groupedEqualsSingle(gpu, classPicks, half);
          },
        );
      }
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("the split-K folds of a decode step (RMSNorm into the grouped product, SwiGLU into the down projection) match float64 and the unfused kernels", async (t) => {
  const gpu = await Gpu.create();
  try {
    for (const half of [false, true]) {
      await t.step(half ? "half B" : "f32 B", () => foldsMatchReference(gpu, half));
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("PETTINGLLMS_MATMUL_PICKS lays JSON picks over the tables; a bad value is a named error", async () => {
  const gpu = await Gpu.create();
  const old = Deno.env.get(MATMUL_PICKS_ENV);
  try {
    Deno.env.set(MATMUL_PICKS_ENV, JSON.stringify({ "nt:square": "sm64x64_k16_t4x4" }));
    const picks = matmulPicks(gpu.ctx.info);
    assertEquals(picks["nt:square"], "sm64x64_k16_t4x4");
    const m = await Matmul.create(gpu);
    const s: MatmulShape = { form: "nt", M: 300, N: 520, K: 36 };
    assertEquals(m.variantFor(s).name, "sm64x64_k16_t4x4");
    const a = seededValues(s.M * s.K, 1), b = seededValues(s.N * s.K, 2);
    const A = gpu.upload(a), B = gpu.upload(b), C = gpu.zeros(s.M * s.N);
    const rec = gpu.recorder();
    m.encode(rec, s, A, B, C);
    rec.submit();
    const got = await gpu.readFloat32(C, s.M * s.N);
    [A, B, C].forEach((x) => x.destroy());
    assert(toleranceRatio(got, matmulRef(s, a, b), 1e-5 * Math.sqrt(s.K) + 1e-6, 1e-4) <= 1);
    for (const bad of ["{", '{"nt:huge":"generic"}', '{"nt:square":3}', "[]"]) {
      Deno.env.set(MATMUL_PICKS_ENV, bad);
      assertThrows(() => matmulPicks(gpu.ctx.info), "RangeError", MATMUL_PICKS_ENV);
    }
  } finally {
    if (old === undefined) Deno.env.delete(MATMUL_PICKS_ENV);
    else Deno.env.set(MATMUL_PICKS_ENV, old);
    gpu.destroy();
  }
});

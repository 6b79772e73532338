// The half-B rewrite of the matmul shaders (src/ops/matmul_half.ts) on text, and the packing the
// kernels read. Every twin's arithmetic against float64 is in kernels_test.ts ("half B" cases)
// and matmul_picks_test.ts (grouped).

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { halfB, halfBits, halfValue, packHalves, roundToHalf } from "../../src/ops/matmul_half.ts";

Deno.test("halfB rewrites every read of B, and only code", () => {
  const src = [
    "@group(0) @binding(2) var<storage, read> B: array<vec4<f32>>;",
    "// C = A · B[b]ᵀ (a comment keeps its text)",
    "fn f(i: u32) -> vec4<f32> { return B[i] + B[min(i, 3u)]; }",
  ].join("\n");
  const out = halfB(src);
  assert(out.includes("var<storage, read> B: array<vec2<u32>>;"), "B declared as packed halves");
  assert(out.includes("return ldB(i) + ldB(min(i, 3u));"), out);
  assert(out.includes("// C = A · B[b]ᵀ (a comment keeps its text)"), "comment untouched");
  const scalar = halfB("var<storage, read> B: array<f32>;\nfn g(i: u32) -> f32 { return B[i]; }");
  assert(scalar.includes("unpack2x16float(B[i >> 1u])[i & 1u]"), scalar);
});

Deno.test("halfB refuses text it cannot rewrite", () => {
  assertThrows(() => halfB("fn f() {}"), "Error", "declaration or read to rewrite");
  // An index with brackets is not rewritten: the count of reads left says so.
  assertThrows(
    () =>
      halfB(
        "var<storage, read> B: array<vec4<f32>>;\nfn f(j: array<u32, 2>) -> vec4<f32> { return B[0u] + B[j[0]]; }",
      ),
    "Error",
    "left unrewritten",
  );
});

Deno.test("packHalves: two halves to a u32, low bits first; roundToHalf matches", () => {
  const v = [1, -2, 0.1, 65504, 1e-8];
  const packed = packHalves(v);
  assertEquals(packed.length, 3); // padded to whole u32s
  assertEquals(packed[0], 0xc000_3c00); // 1.0 = 0x3c00 low, -2.0 = 0xc000 high
  const back = roundToHalf(v);
  assertEquals([...back.subarray(0, 2), back[3]], [1, -2, 65504]);
  assert(Math.abs(back[2] - 0.1) < 1e-4 && back[2] !== Math.fround(0.1), "0.1 rounded to half");
  assertEquals(back[4], 0); // below half's smallest subnormal
});

Deno.test("halfBits rounds like Float16Array (normals, subnormals, ties, overflow)", () => {
  const vals = [
    0,
    -0,
    1,
    1 + 2 ** -11,
    1 + 3 * 2 ** -11,
    65504,
    65520,
    65519,
    1e6,
    -1e6,
    2 ** -14,
    2 ** -15,
    2 ** -24,
    2 ** -25,
    3 * 2 ** -26,
    2 ** -26,
    Infinity,
    -Infinity,
    NaN,
  ];
  const rng = (() => {
    let s = 12345;
    return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  })();
  for (let i = 0; i < 20000; i++) {
    vals.push(Math.fround((rng() - 0.5) * 2 ** Math.floor(rng() * 60 - 40))); // f32 values
  }
  const want = new Uint16Array(new Float16Array(vals).buffer);
  for (let i = 0; i < vals.length; i++) {
    const got = halfBits(vals[i]);
    if (Number.isNaN(vals[i])) assert((got & 0x7c00) === 0x7c00 && (got & 0x3ff) !== 0, "NaN");
    else assertEquals(got, want[i], `halfBits(${vals[i]})`);
    if (!Number.isNaN(vals[i])) {
      assertEquals(Object.is(halfValue(got), new Float16Array([vals[i]])[0]), true, `${vals[i]}`);
    }
  }
});

Deno.test("packHalves packs the same bits without Float16Array (older browsers)", () => {
  const v = Float32Array.from({ length: 1001 }, (_, i) => Math.sin(i) * 2 ** ((i % 40) - 20));
  const native = packHalves(v);
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any, saved = g.Float16Array;
  let written: Uint32Array;
  try {
    delete g.Float16Array;
    written = packHalves(v);
  } finally {
    g.Float16Array = saved;
  }
  assertEquals([...written], [...native]);
});

// float32 ↔ F16/BF16 conversions: exhaustive round trips, numpy's rounding as an independent
// oracle (test/fixtures/f16_golden.json), and hand-picked ties, overflows and NaNs.

import assert from "node:assert/strict";
import {
  bf16BitsToF32Bits,
  decode,
  encode,
  f16BitsToF32Bits,
  f32BitsToBf16Bits,
  f32BitsToF16Bits,
  roundToBf16,
  roundToF16,
} from "../../src/io/dtypes.ts";

const hex = (n: number) => "0x" + n.toString(16);

Deno.test("every F16 bit pattern survives F16 → F32 → F16 (scalar and bulk, NaNs included)", () => {
  const all = new Uint16Array(65536).map((_, i) => i);
  for (let h = 0; h < 65536; h++) {
    assert.equal(f32BitsToF16Bits(f16BitsToF32Bits(h)), h, hex(h));
  }
  const f32 = decode("F16", new Uint8Array(all.buffer));
  assert.deepEqual(new Uint16Array(encode("F16", f32).buffer), all);
});

Deno.test("every BF16 bit pattern survives BF16 → F32 → BF16", () => {
  const all = new Uint16Array(65536).map((_, i) => i);
  for (let b = 0; b < 65536; b++) assert.equal(f32BitsToBf16Bits(bf16BitsToF32Bits(b)), b, hex(b));
  const f32 = decode("BF16", new Uint8Array(all.buffer));
  assert.deepEqual(new Uint16Array(encode("BF16", f32).buffer), all);
});

Deno.test("F16 decoding gives the exact values of known patterns", () => {
  const cases: [number, number][] = [
    [0x3c00, 1],
    [0xc000, -2],
    [0x7bff, 65504],
    [0x0001, 2 ** -24],
    [0x03ff, 1023 * 2 ** -24],
    [0x0400, 2 ** -14],
    [0x3555, 0.333251953125],
    [0x7c00, Infinity],
    [0xfc00, -Infinity],
  ];
  for (const [h, v] of cases) {
    assert.equal(decode("F16", new Uint8Array(new Uint16Array([h]).buffer))[0], v, hex(h));
  }
  assert.ok(Number.isNaN(decode("F16", new Uint8Array(new Uint16Array([0x7e00]).buffer))[0]));
  assert.ok(Object.is(decode("F16", new Uint8Array(new Uint16Array([0x8000]).buffer))[0], -0));
});

Deno.test("F32 → F16 rounding matches numpy on 3015 cases (ties, subnormals, overflow)", async () => {
  const url = new URL("../fixtures/f16_golden.json", import.meta.url);
  const g = JSON.parse(await Deno.readTextFile(url)) as { f32_bits: number[]; f16_bits: number[] };
  for (let i = 0; i < g.f32_bits.length; i++) {
    assert.equal(f32BitsToF16Bits(g.f32_bits[i]), g.f16_bits[i], `f32 ${hex(g.f32_bits[i])}`);
  }
  const bulk = encode("F16", new Float32Array(new Uint32Array(g.f32_bits).buffer));
  assert.deepEqual([...new Uint16Array(bulk.buffer)], g.f16_bits);
});

Deno.test("F32 → BF16 rounds to nearest even, overflows to inf, keeps NaN a NaN", () => {
  const cases: [number, number][] = [
    [0x3f800000, 0x3f80], // 1.0
    [0x3f808000, 0x3f80], // exact tie, even stays
    [0x3f818000, 0x3f82], // exact tie, odd rounds up
    [0x3f808001, 0x3f81], // just above the tie
    [0x3f807fff, 0x3f80], // just below the tie
    [0x7f7fffff, 0x7f80], // FLT_MAX rounds to +inf, as torch does
    [0xff800000, 0xff80], // -inf
    [0x7fc00000, 0x7fc0], // quiet NaN
    [0x7f800001, 0x7fc0], // NaN whose payload lives only in the dropped bits
    [0x00000001, 0x0000], // smallest subnormal rounds to +0
    [0x80000000, 0x8000], // -0
  ];
  for (const [f, b] of cases) assert.equal(f32BitsToBf16Bits(f), b, hex(f));
});

Deno.test("roundToF16/roundToBf16 agree with the bulk encoders", () => {
  const xs = new Float32Array([0.1, -3.14159, 1e-6, 70000, 1 / 3, 2 ** -20]);
  const f16 = decode("F16", encode("F16", xs));
  const bf16 = decode("BF16", encode("BF16", xs));
  xs.forEach((x, i) => {
    assert.equal(roundToF16(x), f16[i]);
    assert.equal(roundToBf16(x), bf16[i]);
  });
  assert.equal(roundToF16(70000), Infinity);
  assert.equal(roundToBf16(1 / 3), 0.333984375);
});

Deno.test("decode reads unaligned byte views and checks lengths", () => {
  const src = new Uint8Array(9);
  src.set(new Uint8Array(new Float32Array([1.5, -2]).buffer), 1);
  assert.deepEqual([...decode("F32", src.subarray(1))], [1.5, -2]);
  assert.throws(() => decode("F16", new Uint8Array(3)), RangeError);
});

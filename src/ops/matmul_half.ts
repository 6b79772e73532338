// Matmuls whose B operand (a frozen weight) is stored as IEEE half floats: every matmul shader
// has a twin "<shader>_hb" with B read as packed halves, two to a u32, and widened with
// unpack2x16float (core WGSL: no shader-f16 needed), all arithmetic in f32. Half the bytes of a
// weight read: what decode, bound by weight traffic, is made of. The twins are derived from the
// f32 shaders' text (one source of the arithmetic), so a kernel and its twin compute the same
// sums of the same products, B rounded to half.
//
// Layout: element i of B is the low (i even) or high (i odd) 16 bits of u32 i / 2, which is
// what a Float16Array's bytes are on a little-endian host; strides and offsets stay in elements.

import type { ShaderTransform } from "../gpu/shaders.ts";

/** The suffix of a shader's half-B twin. */
export const HALF_B = "_hb";

const VEC4_DECL = /var<storage, read> (B[012]?): array<vec4<f32>>;/g;
const SCALAR_DECL = /var<storage, read> (B[012]?): array<f32>;/g;
const LOAD = /\b(B[012]?)\[([^[\]]*)\]/g;

/**
 * The half-B twin of a matmul shader's text: each read of B (or B0, B1, B2) becomes a call of a
 * loader that widens packed halves. Throws if the text declares no B or reads it in a way the
 * rewrite does not cover (an index with brackets, or a write).
 */
export function halfB(source: string): string {
  let loads = 0;
  // Code only: comments keep their text.
  let out = source.split("\n").map((line) => {
    const c = line.indexOf("//");
    const code = c < 0 ? line : line.slice(0, c), note = c < 0 ? "" : line.slice(c);
    return code.replace(LOAD, (_, n: string, i: string) => {
      loads++;
      return `ld${n}(${i})`;
    }) + note;
  }).join("\n");
  let decls = 0;
  out = out.replace(VEC4_DECL, (_, n: string) => {
    decls++;
    return `var<storage, read> ${n}: array<vec2<u32>>; // half floats, 4 per element\n` +
      `fn ld${n}(i: u32) -> vec4<f32> {\n` +
      `  let h = ${n}[i];\n` +
      `  return vec4<f32>(unpack2x16float(h.x), unpack2x16float(h.y));\n` +
      `}`;
  });
  out = out.replace(SCALAR_DECL, (_, n: string) => {
    decls++;
    return `var<storage, read> ${n}: array<u32>; // half floats, 2 per element\n` +
      `fn ld${n}(i: u32) -> f32 { return unpack2x16float(${n}[i >> 1u])[i & 1u]; }`;
  });
  if (!decls || !loads) {
    throw new Error(`halfB: no B declaration or read to rewrite (${decls} / ${loads})`);
  }
  // Every remaining B access (outside comments) is one of the loaders' own.
  const code = out.split("\n").map((l) => l.replace(/\/\/.*$/, "")).join("\n");
  const left = [...code.matchAll(/\b(B[012]?)\[/g)].length;
  if (left !== decls) throw new Error(`halfB: ${left - decls} reads of B left unrewritten`);
  return out;
}

/** The matmul shaders that have half-B twins (their B is a weight in A·Bᵀ and A·B). */
export const HALF_B_BASES = [
  "matmul_reg",
  "matmul_reg_big",
  "matmul_smem",
  "matmul_group",
  "matmul_splitk",
  "matmul_splitk_group",
  "matmul_tiled",
] as const;

/** The registrations of the twins: "<base>_hb" → halfB(base). */
export const HALF_B_SHADERS: Readonly<Record<string, ShaderTransform>> = Object.fromEntries(
  HALF_B_BASES.map((base) => [`${base}${HALF_B}`, { base, transform: halfB }]),
);

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);

/**
 * The IEEE half-float bits of x rounded to nearest even (what Float16Array stores; written out so
 * that browsers without Float16Array pack the same bits). Beyond ±65504 → ±Infinity; NaN → NaN.
 */
export function halfBits(x: number): number {
  f32[0] = x;
  const b = u32[0], sign = (b >>> 16) & 0x8000, exp = (b >>> 23) & 0xff, man = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);
  // The exact value is m · 2^(e − 23) with m the 24-bit significand; a half keeps 11 bits
  // (10 for subnormals below 2^-14). Shift and round to nearest even.
  const e = exp - 127;
  if (e > 15) return sign | 0x7c00;
  const m = exp ? man | 0x800000 : man;
  const shift = e >= -14 ? 13 : 13 + (-14 - e); // bits dropped from the 24-bit significand
  if (shift > 24) return sign; // below half of the smallest subnormal
  const kept = m >>> shift, rest = m - kept * 2 ** shift, half = 2 ** (shift - 1);
  const r = kept + (rest > half || (rest === half && (kept & 1)) ? 1 : 0);
  // Normal: exponent field e + 15 with the leading bit folded in (a carry out of the mantissa
  // rounds into the next exponent, or to Infinity); subnormal: the mantissa alone.
  return sign | (e >= -14 ? ((e + 14) << 10) + r : r);
}

/** The value of half-float bits h. */
export function halfValue(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >>> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0x1f) return m ? NaN : s * Infinity;
  return s * (e ? (1 + m / 1024) * 2 ** (e - 15) : m * 2 ** -24);
}

/**
 * f32 values as packed halves (rounded to nearest even), padded to a whole number of u32s: what
 * a half-B kernel binds.
 */
export function packHalves(values: ArrayLike<number>): Uint32Array {
  const out = new Uint32Array(Math.ceil(values.length / 2));
  for (let i = 0; i < values.length; i++) out[i >> 1] |= halfBits(values[i]) << (16 * (i & 1));
  return out;
}

/** The f32 values a half-B kernel reads for `values` (each rounded to half). */
export function roundToHalf(values: ArrayLike<number>): Float32Array {
  return Float32Array.from(values, (v) => halfValue(halfBits(v)));
}

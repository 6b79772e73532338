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

/**
 * The half-B twin of a matmul shader's text: each read of B (or B0, B1, B2) becomes a call of a
 * loader that widens packed halves. Throws if the text declares no B or reads it in a way the
 * rewrite does not cover (an index with brackets, or a write).
 */
export function halfB(source: string): string {
  return halfReads(source, "B[012]?");
}

/**
 * `source` with the read-only storage arrays whose names match `names` (a regular expression
 * source, e.g. "Src") read as packed half floats: array<vec4<f32>> and array<f32> declarations
 * become packed u32 arrays with a loader ld<Name>(i) that widens, and every read X[i] a call of
 * it. Throws if nothing matches or a read is left unrewritten.
 */
export function halfReads(source: string, names: string): string {
  const VEC4_DECL = new RegExp(`var<storage, read> (${names}): array<vec4<f32>>;`, "g");
  const SCALAR_DECL = new RegExp(`var<storage, read> (${names}): array<f32>;`, "g");
  const LOAD = new RegExp(`\\b(${names})\\[([^[\\]]*)\\]`, "g");
  const ANY = new RegExp(`\\b(${names})\\[`, "g");
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
    throw new Error(`halfReads: no ${names} declaration or read to rewrite (${decls} / ${loads})`);
  }
  // Every remaining B access (outside comments) is one of the loaders' own.
  const code = out.split("\n").map((l) => l.replace(/\/\/.*$/, "")).join("\n");
  const left = [...code.matchAll(ANY)].length;
  if (left !== decls) {
    throw new Error(`halfReads: ${left - decls} reads of ${names} left unrewritten`);
  }
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
  "matmul_splitk_sg",
  "matmul_splitk_group_sg",
  "matmul_splitk_group_norm",
  "matmul_splitk_group_norm_sg",
  "matmul_splitk_swiglu",
  "matmul_splitk_swiglu_sg",
  "matmul_tiled",
] as const;

/**
 * The registrations of the twins: "<base>_hb" → halfB(base); and the embedding gathers reading
 * a half-float embedding (their `Src`): gather_rows_hb, split_params_hb (gather_rows_range).
 */
export const HALF_B_SHADERS: Readonly<Record<string, ShaderTransform>> = {
  ...Object.fromEntries(
    HALF_B_BASES.map((base) => [`${base}${HALF_B}`, { base, transform: halfB }]),
  ),
  ...Object.fromEntries(
    ["gather_rows", "split_params"].map((base) => [
      `${base}${HALF_B}`,
      { base, transform: (src: string) => halfReads(src, "Src") },
    ]),
  ),
};

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);

/**
 * The IEEE half-float bits of x (taken as an f32: x is rounded to f32 first) rounded to nearest even (what Float16Array stores; written out so
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
  // Float16Array (where the runtime has it) converts natively, bit for bit as halfBits does.
  // deno-lint-ignore no-explicit-any
  const F16 = (globalThis as any).Float16Array;
  if (F16) {
    const h = new F16(Math.ceil(values.length / 2) * 2);
    h.set(values);
    return new Uint32Array(h.buffer);
  }
  const out = new Uint32Array(Math.ceil(values.length / 2));
  for (let i = 0; i < values.length; i++) out[i >> 1] |= halfBits(values[i]) << (16 * (i & 1));
  return out;
}

/** The f32 values a half-B kernel reads for `values` (each rounded to half). */
export function roundToHalf(values: ArrayLike<number>): Float32Array {
  return Float32Array.from(values, (v) => halfValue(halfBits(v)));
}

// Bit-exact conversions between float32 and the 16-bit float formats of checkpoints (IEEE
// binary16 "F16" and bfloat16 "BF16"). Encoding rounds to nearest, ties to even, as PyTorch and
// numpy do; decoding is exact. Bulk paths work on raw bits so NaN payloads survive unchanged.

/** Storage dtypes this project reads into float32 and writes from float32. */
export type FloatDtype = "F32" | "F16" | "BF16";

/** Bytes per element of each float dtype. */
export const DTYPE_BYTES: Readonly<Record<FloatDtype, number>> = { F32: 4, F16: 2, BF16: 2 };

// Every supported host is little-endian; safetensors is little-endian. Typed-array views below
// rely on that, so fail loudly on the (theoretical) big-endian host instead of reading garbage.
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
if (!LITTLE_ENDIAN) throw new Error("big-endian hosts are not supported by src/io/dtypes.ts");

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** float32 bit pattern → binary16 bit pattern, round to nearest even; overflow gives ±inf. */
export function f32BitsToF16Bits(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) {
    // inf stays inf; a NaN keeps its top payload bits but must not collapse into inf.
    return mant === 0 ? sign | 0x7c00 : sign | 0x7c00 | ((mant >>> 13) || 0x200);
  }
  const e = exp - 127 + 15; // binary16 biased exponent
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Result is subnormal (or zero): value = m * 2^-24 with m = (1.mant) >> (14 - e).
    const shift = 14 - e;
    if (shift > 24) return sign;
    const full = mant | 0x800000;
    let m = full >>> shift;
    const rem = full & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (m & 1) === 1)) m++;
    return sign | m; // m may reach 0x400, which is exactly the smallest normal: still correct
  }
  let h = sign | (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++; // a carry rolls into exp, then inf
  return h;
}

/** binary16 bit pattern → float32 bit pattern (exact). */
export function f16BitsToF32Bits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >>> 10) & 0x1f;
  let mant = h & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0;
  if (exp !== 0) return (sign | ((exp - 15 + 127) << 23) | (mant << 13)) >>> 0;
  if (mant === 0) return sign >>> 0;
  // Subnormal binary16 becomes a normal float32: normalise the mantissa.
  let e = -14;
  while ((mant & 0x400) === 0) {
    mant <<= 1;
    e--;
  }
  return (sign | ((e + 127) << 23) | ((mant & 0x3ff) << 13)) >>> 0;
}

/** float32 bit pattern → bfloat16 bit pattern, round to nearest even; NaN stays NaN. */
export function f32BitsToBf16Bits(x: number): number {
  if ((x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0) {
    const top = x >>> 16;
    return (top & 0x7f) === 0 ? top | 0x40 : top;
  }
  return ((x >>> 0) + 0x7fff + ((x >>> 16) & 1)) >>> 16;
}

/** bfloat16 bit pattern → float32 bit pattern (exact). */
export function bf16BitsToF32Bits(b: number): number {
  return (b << 16) >>> 0;
}

/** Rounds a number to the nearest binary16 value (as a JS number). */
export function roundToF16(v: number): number {
  scratchF32[0] = v;
  scratchU32[0] = f16BitsToF32Bits(f32BitsToF16Bits(scratchU32[0]));
  return scratchF32[0];
}

/** Rounds a number to the nearest bfloat16 value (as a JS number). */
export function roundToBf16(v: number): number {
  scratchF32[0] = v;
  scratchU32[0] = bf16BitsToF32Bits(f32BitsToBf16Bits(scratchU32[0]));
  return scratchF32[0];
}

let f16Table: Uint32Array | null = null;

/** All 65536 binary16 → float32 bit patterns, built once (256 KiB) because bulk decode is hot. */
function f16ToF32Table(): Uint32Array {
  if (f16Table === null) {
    f16Table = new Uint32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = f16BitsToF32Bits(h);
  }
  return f16Table;
}

/** Copies `bytes` into a fresh ArrayBuffer when their offset does not allow a typed view. */
function aligned(bytes: Uint8Array, align: number): Uint8Array {
  return bytes.byteOffset % align === 0 ? bytes : bytes.slice();
}

/**
 * Decodes little-endian `dtype` elements from `bytes` into `out` (float32, `out.length`
 * elements). `bytes.length` must be `out.length * DTYPE_BYTES[dtype]`.
 */
export function decodeInto(dtype: FloatDtype, bytes: Uint8Array, out: Float32Array): void {
  const n = out.length;
  if (bytes.length !== n * DTYPE_BYTES[dtype]) {
    throw new RangeError(`decodeInto: ${bytes.length} bytes for ${n} ${dtype} elements`);
  }
  const outBits = new Uint32Array(out.buffer, out.byteOffset, n);
  if (dtype === "F32") {
    const a = aligned(bytes, 4);
    outBits.set(new Uint32Array(a.buffer, a.byteOffset, n));
    return;
  }
  const a = aligned(bytes, 2);
  const src = new Uint16Array(a.buffer, a.byteOffset, n);
  if (dtype === "F16") {
    const table = f16ToF32Table();
    for (let i = 0; i < n; i++) outBits[i] = table[src[i]];
  } else {
    for (let i = 0; i < n; i++) outBits[i] = src[i] << 16;
  }
}

/** Decodes `dtype` bytes into a new Float32Array. */
export function decode(dtype: FloatDtype, bytes: Uint8Array): Float32Array {
  const out = new Float32Array(bytes.length / DTYPE_BYTES[dtype]);
  decodeInto(dtype, bytes, out);
  return out;
}

/** Encodes float32 values as little-endian `dtype` bytes (rounding to nearest even). */
export function encode(dtype: FloatDtype, values: Float32Array): Uint8Array {
  const n = values.length;
  const bits = new Uint32Array(values.buffer, values.byteOffset, n);
  if (dtype === "F32") return new Uint8Array(bits.slice().buffer);
  const out = new Uint16Array(n);
  if (dtype === "F16") {
    for (let i = 0; i < n; i++) out[i] = f32BitsToF16Bits(bits[i]);
  } else {
    for (let i = 0; i < n; i++) out[i] = f32BitsToBf16Bits(bits[i]);
  }
  return new Uint8Array(out.buffer);
}

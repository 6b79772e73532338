// Structured-clone data as JSON text, for the Deno subprocess's stdin. node:v8's serializer
// would do, but loading it in the sandbox costs ~50 ms per run (the Node layer boots);
// this costs microseconds. Covers what structuredClone does for task data: primitives
// (NaN, -0, bigint, undefined), arrays, plain objects, Map, Set, Date, RegExp, typed arrays,
// ArrayBuffer. Rejects functions, symbols and cycles with the path of the offending value.

/** `{"$w": tag, ...}` marks a value JSON cannot carry; plain objects using "$w" are wrapped. */
const TAG = "$w";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const TYPED_ARRAYS = [
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
] as const;

/** Thrown for a value structuredClone would refuse; the message has its path. */
export class WireError extends Error {
  override name = "WireError";
}

function bytesOf(buf: ArrayBufferLike, offset: number, length: number): string {
  let s = "";
  const b = new Uint8Array(buf, offset, length);
  for (let i = 0; i < b.length; i += 0x8000) {
    s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function encodeObject(v: object, path: string, stack: object[]): Json {
  if (stack.includes(v)) {
    throw new WireError(`${path} refers back to itself (cycles are not supported)`);
  }
  stack.push(v);
  try {
    const at = (k: string | number, x: unknown) =>
      encodeValue(x, `${path}[${JSON.stringify(k)}]`, stack);
    if (Array.isArray(v)) return Array.from(v, (x, i) => at(i, x));
    if (v instanceof Date) return { [TAG]: "date", v: v.getTime() };
    if (v instanceof RegExp) return { [TAG]: "re", s: v.source, f: v.flags };
    if (v instanceof Map) {
      return { [TAG]: "map", v: [...v].map(([k, x], i) => [at(i, k), at(i, x)]) };
    }
    if (v instanceof Set) return { [TAG]: "set", v: [...v].map((x, i) => at(i, x)) };
    if (v instanceof ArrayBuffer) return { [TAG]: "ab", v: bytesOf(v, 0, v.byteLength) };
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
      const t = v.constructor.name;
      return { [TAG]: "ta", t, v: bytesOf(v.buffer, v.byteOffset, v.byteLength) };
    }
    if (
      ArrayBuffer.isView(v) || v instanceof Promise || v instanceof WeakMap || v instanceof Error
    ) {
      throw new WireError(`${path} is a ${v.constructor.name}, which is not plain data`);
    }
    const out: { [k: string]: Json } = {};
    for (const k of Object.keys(v)) out[k] = at(k, (v as Record<string, unknown>)[k]);
    return TAG in out ? { [TAG]: "obj", v: out } : out;
  } finally {
    stack.pop();
  }
}

function encodeValue(v: unknown, path: string, stack: object[]): Json {
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      if (Object.is(v, -0)) return { [TAG]: "num", v: "-0" }; // String(-0) is "0"
      return Number.isFinite(v) ? v : { [TAG]: "num", v: String(v) };
    case "bigint":
      return { [TAG]: "big", v: v.toString() };
    case "undefined":
      return { [TAG]: "undef" };
    case "object":
      return v === null ? null : encodeObject(v, path, stack);
    default:
      throw new WireError(`${path} is a ${typeof v}, which is not plain data`);
  }
}

/** JSON text for `value`; throws WireError naming the first value that is not plain data. */
export function encodeWire(value: unknown, rootName = "value"): string {
  return JSON.stringify(encodeValue(value, rootName, []));
}

function decodeBytes(b64: string): ArrayBuffer {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out.buffer;
}

function decodeTagged(t: Record<string, Json>): unknown {
  const v = t.v;
  switch (t[TAG]) {
    case "undef":
      return undefined;
    case "num":
      return Number(v);
    case "big":
      return BigInt(v as string);
    case "date":
      return new Date(v as number);
    case "re":
      return new RegExp(t.s as string, t.f as string);
    case "map":
      return new Map((v as Json[][]).map(([k, x]) => [decodeJson(k), decodeJson(x)]));
    case "set":
      return new Set((v as Json[]).map(decodeJson));
    case "ab":
      return decodeBytes(v as string);
    case "ta": {
      const ctor = TYPED_ARRAYS.find((c) => c.name === t.t);
      if (!ctor) throw new WireError(`unknown typed array ${String(t.t)}`);
      return new ctor(decodeBytes(v as string));
    }
    case "obj":
      return decodePlain(v as Record<string, Json>);
  }
  throw new WireError(`unknown wire tag ${String(t[TAG])}`);
}

function decodePlain(o: Record<string, Json>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // defineProperty: a key named "__proto__" must stay data, not replace the prototype.
  for (const k of Object.keys(o)) {
    Object.defineProperty(out, k, {
      value: decodeJson(o[k]),
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return out;
}

function decodeJson(j: Json): unknown {
  if (j === null || typeof j !== "object") return j;
  if (Array.isArray(j)) return j.map(decodeJson);
  return TAG in j ? decodeTagged(j) : decodePlain(j);
}

/** Inverse of encodeWire. */
export function decodeWire(text: string): unknown {
  return decodeJson(JSON.parse(text) as Json);
}

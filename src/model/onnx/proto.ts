// A dependency-free writer of the ONNX protobuf messages an exported decoder needs (ModelProto,
// GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto, OperatorSetIdProto), with
// the protobuf wire format written by hand: varints and length-delimited fields. Messages are
// encoded into lists of byte chunks so that tensor data (hundreds of MB) is copied exactly once,
// into the final file. Field numbers are those of onnx/onnx.proto (proto2 syntax, so repeated
// scalars are written unpacked, which every parser accepts).

import { OnnxExportError } from "./errors.ts";

// ---------------------------------------------------------------------------------------------
// Wire format

/** An encoded message: byte chunks to concatenate, and their total length. */
export class Chunks {
  readonly parts: Uint8Array[] = [];
  length = 0;

  push(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.parts.push(bytes);
    this.length += bytes.length;
  }

  /** One contiguous buffer (the only copy of the data). */
  concat(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

const WIRE_VARINT = 0, WIRE_FIXED32 = 5, WIRE_LEN = 2;

/**
 * Varint bytes of a non-negative integer or of an int64 given as bigint; negative values take
 * 10 bytes (two's complement of 64 bits), as protobuf's int64 encoding requires.
 */
export function varint(value: number | bigint): Uint8Array {
  if (typeof value === "number" && !Number.isSafeInteger(value)) {
    throw new RangeError(`varint: ${value} is not a safe integer`);
  }
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Uint8Array.from(out);
}

function tag(field: number, wire: number): Uint8Array {
  return varint(field * 8 + wire);
}

const utf8 = new TextEncoder();

/** A message being encoded: typed field writers in any order (fields carry their numbers). */
class Writer {
  readonly out = new Chunks();

  int(field: number, value: number | bigint): this {
    this.out.push(tag(field, WIRE_VARINT));
    this.out.push(varint(value));
    return this;
  }

  float(field: number, value: number): this {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.out.push(tag(field, WIRE_FIXED32));
    this.out.push(b);
    return this;
  }

  bytes(field: number, data: Uint8Array): this {
    this.out.push(tag(field, WIRE_LEN));
    this.out.push(varint(data.length));
    this.out.push(data);
    return this;
  }

  string(field: number, s: string): this {
    return this.bytes(field, utf8.encode(s));
  }

  message(field: number, m: Chunks): this {
    this.out.push(tag(field, WIRE_LEN));
    this.out.push(varint(m.length));
    for (const p of m.parts) this.out.push(p);
    return this;
  }
}

// ---------------------------------------------------------------------------------------------
// ONNX messages

/** TensorProto.DataType values used here. */
export const DataType = { FLOAT: 1, INT32: 6, INT64: 7, BOOL: 9 } as const;
export type DataTypeName = keyof typeof DataType;

/** A dimension: a fixed size or a symbolic name such as "batch". */
export type Dim = number | string;

export interface TensorInit {
  readonly name: string;
  readonly dtype: DataTypeName;
  readonly dims: readonly number[];
  /** Little-endian element bytes (raw_data); a typed array's bytes are used as they are. */
  readonly data: Float32Array | BigInt64Array | Int32Array | Uint8Array;
}

/** TensorProto with raw_data (fields: dims 1, data_type 2, name 8, raw_data 9). */
export function encodeTensor(t: TensorInit): Chunks {
  const count = t.dims.reduce((a, b) => a * b, 1);
  const bytesPer = t.dtype === "BOOL" ? 1 : t.dtype === "INT64" ? 8 : 4;
  if (t.data.byteLength !== count * bytesPer) {
    throw new OnnxExportError(
      `tensor "${t.name}": ${t.data.byteLength} bytes of data for dims [${t.dims}] ` +
        `(${count * bytesPer} expected); this is a bug in the exporter`,
    );
  }
  const w = new Writer();
  for (const d of t.dims) w.int(1, d);
  w.int(2, DataType[t.dtype]);
  w.string(8, t.name);
  w.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  return w.out;
}

/** ValueInfoProto of a tensor: name 1, type 2 → TypeProto.tensor_type 1 → elem_type 1, shape 2. */
export function encodeValueInfo(name: string, dtype: DataTypeName, dims: readonly Dim[]): Chunks {
  const shape = new Writer();
  for (const d of dims) {
    const dim = new Writer();
    if (typeof d === "number") dim.int(1, d);
    else dim.string(2, d);
    shape.message(1, dim.out);
  }
  const tensorType = new Writer().int(1, DataType[dtype]).message(2, shape.out);
  const type = new Writer().message(1, tensorType.out);
  return new Writer().string(1, name).message(2, type.out).out;
}

/** An attribute value: int, float, ints, or a tensor (ONNX picks the field by the type). */
export type AttrValue =
  | { readonly int: number }
  | { readonly float: number }
  | { readonly ints: readonly number[] }
  | { readonly tensor: TensorInit };

/** AttributeProto: name 1, f 2, i 3, t 5, ints 8, type 20 (FLOAT 1, INT 2, TENSOR 4, INTS 7). */
function encodeAttribute(name: string, v: AttrValue): Chunks {
  const w = new Writer().string(1, name);
  if ("int" in v) w.int(3, v.int).int(20, 2);
  else if ("float" in v) w.float(2, v.float).int(20, 1);
  else if ("ints" in v) {
    for (const i of v.ints) w.int(8, i);
    w.int(20, 7);
  } else w.message(5, encodeTensor(v.tensor)).int(20, 4);
  return w.out;
}

export interface NodeInit {
  readonly opType: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly name: string;
  readonly attrs?: Readonly<Record<string, AttrValue>>;
}

/** NodeProto: input 1, output 2, name 3, op_type 4, attribute 5. */
function encodeNode(n: NodeInit): Chunks {
  const w = new Writer();
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  w.string(3, n.name).string(4, n.opType);
  for (const [k, v] of Object.entries(n.attrs ?? {})) w.message(5, encodeAttribute(k, v));
  return w.out;
}

export interface ValueInit {
  readonly name: string;
  readonly dtype: DataTypeName;
  readonly dims: readonly Dim[];
}

export interface GraphInit {
  readonly name: string;
  readonly nodes: readonly NodeInit[];
  readonly initializers: readonly TensorInit[];
  readonly inputs: readonly ValueInit[];
  readonly outputs: readonly ValueInit[];
}

/** GraphProto: node 1, name 2, initializer 5, input 11, output 12. */
function encodeGraph(g: GraphInit): Chunks {
  const w = new Writer();
  for (const n of g.nodes) w.message(1, encodeNode(n));
  w.string(2, g.name);
  for (const t of g.initializers) w.message(5, encodeTensor(t));
  for (const v of g.inputs) w.message(11, encodeValueInfo(v.name, v.dtype, v.dims));
  for (const v of g.outputs) w.message(12, encodeValueInfo(v.name, v.dtype, v.dims));
  return w.out;
}

/** Opset of the default domain the exporter targets; IR version 8 is the one that opset needs. */
export const OPSET = 17;
export const IR_VERSION = 8;

/** A protobuf message may not exceed 2 GiB; parsers (onnxruntime included) refuse larger files. */
export const MAX_PROTO_BYTES = 2 ** 31 - 1;

/**
 * ModelProto (ir_version 1, producer_name 2, producer_version 3, graph 7, opset_import 8,
 * doc_string 6) as one byte array: the .onnx file.
 */
export function encodeModel(g: GraphInit, docString = ""): Uint8Array {
  const opset = new Writer().string(1, "").int(2, OPSET);
  const w = new Writer()
    .int(1, IR_VERSION)
    .string(2, "pettingllms-webgpu")
    .string(3, "0.1.0");
  if (docString) w.string(6, docString);
  w.message(7, encodeGraph(g)).message(8, opset.out);
  if (w.out.length > MAX_PROTO_BYTES) {
    throw new OnnxExportError(
      `the model would be ${(w.out.length / 2 ** 30).toFixed(2)} GiB, over protobuf's 2 GiB ` +
        `limit for one .onnx file; export a smaller model (external data is not implemented)`,
    );
  }
  return w.out.concat();
}

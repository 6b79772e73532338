// A small builder for ONNX graphs: nodes are added in order by `op`, which invents unique value
// names from a readable hint (so a graph dump reads like the model), constants are deduplicated
// by content, and `build()` returns the plain GraphInit that proto.ts encodes.

import type {
  AttrValue,
  DataTypeName,
  Dim,
  GraphInit,
  NodeInit,
  TensorInit,
  ValueInit,
} from "./proto.ts";
import { OnnxExportError } from "./errors.ts";

export interface OpOptions {
  readonly attrs?: Readonly<Record<string, AttrValue>>;
  /** Exact output names (graph outputs such as "logits"); otherwise fresh names from `hint`. */
  readonly outputs?: readonly string[];
  /** Number of fresh outputs (Split); ignored when `outputs` is given. Default 1. */
  readonly numOutputs?: number;
  /** Readable prefix of the fresh names, e.g. "l3.q_proj". Default: the op type. */
  readonly hint?: string;
}

export class GraphBuilder {
  private readonly nodes: NodeInit[] = [];
  private readonly initializers: TensorInit[] = [];
  private readonly inputs: ValueInit[] = [];
  private readonly outputs: ValueInit[] = [];
  private readonly used = new Set<string>();
  private readonly constants = new Map<string, string>();

  constructor(readonly name: string) {}

  /** A value name not used yet, derived from `hint`. */
  fresh(hint: string): string {
    let name = hint;
    for (let i = 1; this.used.has(name); i++) name = `${hint}_${i}`;
    this.used.add(name);
    return name;
  }

  private claim(name: string): string {
    if (this.used.has(name)) {
      throw new OnnxExportError(`value "${name}" is defined twice; this is a bug in the exporter`);
    }
    this.used.add(name);
    return name;
  }

  input(name: string, dtype: DataTypeName, dims: readonly Dim[]): string {
    this.inputs.push({ name: this.claim(name), dtype, dims });
    return name;
  }

  /** Declares an already-produced value (named through OpOptions.outputs) as a graph output. */
  output(name: string, dtype: DataTypeName, dims: readonly Dim[]): void {
    if (!this.used.has(name)) {
      throw new OnnxExportError(`graph output "${name}" is never produced; exporter bug`);
    }
    this.outputs.push({ name, dtype, dims });
  }

  /** A weight or table stored in the file. Returns its value name. */
  initializer(
    name: string,
    dtype: DataTypeName,
    dims: readonly number[],
    data: TensorInit["data"],
  ) {
    this.initializers.push({ name: this.claim(name), dtype, dims, data });
    return name;
  }

  /** An int64 constant (shape vectors, axes); same values give the same initializer. */
  int64(values: readonly number[], scalar = false): string {
    const key = `i64:${scalar ? "s" : "v"}:${values.join(",")}`;
    let name = this.constants.get(key);
    if (name === undefined) {
      name = this.fresh(scalar ? `const_i64_${values[0]}` : `const_i64_[${values.join(",")}]`);
      const data = BigInt64Array.from(values, (v) => BigInt(v));
      this.initializers.push({ name, dtype: "INT64", dims: scalar ? [] : [values.length], data });
      this.constants.set(key, name);
    }
    return name;
  }

  /** A float32 scalar constant (eps, scales, mask fill). */
  float(value: number): string {
    const key = `f32:${Object.is(value, -0) ? "-0" : value}`;
    let name = this.constants.get(key);
    if (name === undefined) {
      name = this.fresh(`const_f32_${value}`);
      this.initializers.push({ name, dtype: "FLOAT", dims: [], data: Float32Array.of(value) });
      this.constants.set(key, name);
    }
    return name;
  }

  /** Adds a node; returns its output names. */
  ops(opType: string, inputs: readonly string[], o: OpOptions = {}): string[] {
    for (const i of inputs) {
      if (i !== "" && !this.used.has(i)) {
        throw new OnnxExportError(`${opType} reads "${i}" before it exists; exporter bug`);
      }
    }
    const hint = o.hint ?? opType;
    const outputs = o.outputs?.map((n) => this.claim(n)) ??
      Array.from({ length: o.numOutputs ?? 1 }, () => this.fresh(hint));
    this.nodes.push({
      opType,
      inputs,
      outputs,
      name: this.fresh(`node.${outputs[0]}`),
      attrs: o.attrs,
    });
    return outputs;
  }

  /** Adds a single-output node; returns the output name. */
  op(opType: string, inputs: readonly string[], o: OpOptions = {}): string {
    return this.ops(opType, inputs, o)[0];
  }

  build(): GraphInit {
    return {
      name: this.name,
      nodes: this.nodes,
      initializers: this.initializers,
      inputs: this.inputs,
      outputs: this.outputs,
    };
  }
}

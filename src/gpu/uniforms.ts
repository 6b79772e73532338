// Uniform parameter structs declared once: a definition in TypeScript emits the WGSL struct (a
// shader takes it with `//! include <include name>`) and packs values by field name, so a
// kernel's host code and its shader cannot disagree on the order or kind of a field.
//
//   const SoftmaxParams = uniformStruct("softmax_params", "Params", [["rows", "u32"], ["cols", "u32"]]);
//   // shaders/softmax.wgsl:  //! include softmax_params
//   rec.dispatch(kernel, bindings, grid, SoftmaxParams.pack({ rows, cols }));
//
// Fields are 4-byte scalars (u32, i32, f32) in declaration order; the struct is padded with
// zero fields (_pad0, _pad1, ...) to a multiple of 16 bytes, as uniform buffers require. Fields
// whose names start with "_" are padding the shader reads as 0: pack fills them in.
// A struct may end in one more member the host writes itself (`tail`, WGSL text such as
// "layer: array<Layer, MAXL>", its types declared by the shader): pack writes the scalars (the
// header, `bytes` long) and the host puts the tail's bytes after them.

import { KernelArgumentError } from "./errors.ts";
import { registerShaderGenerators } from "./shaders.ts";

export type UniformKind = "u32" | "i32" | "f32";
type Padding = `_${string}`;
/** The values pack() takes: every field but padding, by name. */
export type UniformValues<N extends string> = { readonly [K in Exclude<N, Padding>]: number };

export class UniformStruct<N extends string> {
  /** Every field, padding included, in memory order. */
  readonly fields: readonly (readonly [string, UniformKind])[];
  /** The scalars' bytes (what pack writes): the struct's size unless it has a tail. */
  readonly bytes: number;
  readonly wgsl: string;

  constructor(
    /** The include name shaders use (`//! include NAME`); unique across the project. */
    readonly include: string,
    /** The struct's name in WGSL. */
    readonly name: string,
    declared: readonly (readonly [N, UniformKind])[],
    /** A last member written by the host after the scalars (WGSL `name: type`), or none. */
    readonly tail?: string,
  ) {
    const names = declared.map(([n]) => n as string);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup !== undefined) throw new Error(`uniform struct ${include}: field ${dup} twice`);
    const bad = names.find((n) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(n));
    if (bad !== undefined) throw new Error(`uniform struct ${include}: bad field name "${bad}"`);
    const fields: (readonly [string, UniformKind])[] = [...declared];
    const words = Math.max(4, Math.ceil(fields.length / 4) * 4);
    for (let i = 0; fields.length < words; i++) {
      if (!names.includes(`_pad${i}`)) fields.push([`_pad${i}`, "u32"]);
    }
    this.fields = fields;
    this.bytes = words * 4;
    const rows: string[] = [];
    for (let i = 0; i < fields.length; i += 4) {
      rows.push("  " + fields.slice(i, i + 4).map(([n, k]) => `${n}: ${k},`).join(" "));
    }
    if (tail !== undefined) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*: [^;{}]+$/.test(tail) || names.includes(tail.split(":")[0])) {
        throw new Error(`uniform struct ${include}: bad tail member "${tail}"`);
      }
      rows.push(`  ${tail},`);
    }
    this.wgsl = `struct ${name} {\n${rows.join("\n")}\n}\n`;
  }

  /** The uniform block's bytes; throws KernelArgumentError naming a missing or bad value. */
  pack(values: UniformValues<N>): ArrayBuffer {
    const buf = new ArrayBuffer(this.bytes);
    const dv = new DataView(buf);
    const v = values as Readonly<Record<string, number>>;
    this.fields.forEach(([n, kind], i) => {
      if (n.startsWith("_")) return;
      const x = v[n];
      if (typeof x !== "number" || !(kind === "f32" ? !Number.isNaN(x) : Number.isInteger(x))) {
        throw new KernelArgumentError(
          `${this.include}.${n} must be ${kind === "f32" ? "a number" : "an integer"}, got ${x}`,
        );
      }
      if (kind === "u32") {
        if (x < 0 || x > 0xffffffff) {
          throw new KernelArgumentError(`${this.include}.${n} must fit a u32, got ${x}`);
        }
        dv.setUint32(i * 4, x, true);
      } else if (kind === "i32") dv.setInt32(i * 4, x, true);
      else dv.setFloat32(i * 4, x, true);
    });
    return buf;
  }
}

/**
 * Declares a uniform struct and registers its WGSL under `include`, so that a shader's line
 * `//! include <include>` stands for the declaration. `opts.tail`: a last member the host
 * writes itself after pack's bytes (see above).
 */
export function uniformStruct<const N extends string>(
  include: string,
  name: string,
  fields: readonly (readonly [N, UniformKind])[],
  opts: { tail?: string } = {},
): UniformStruct<N> {
  const s = new UniformStruct(include, name, fields, opts.tail);
  registerShaderGenerators({ [include]: () => s.wgsl });
  return s;
}

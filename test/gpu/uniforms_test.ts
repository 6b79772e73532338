// Uniform structs declared once (src/gpu/uniforms.ts): the WGSL they emit, packing by field name,
// padding to 16 bytes, named errors, and the include a shader takes them by; every shader's
// includes resolve with the shader CLI's modules loaded (each kernel's host module).

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { shaderNames } from "../../src/cli/shader.ts";
import { shaderSource } from "../../src/gpu/shaders.ts";
import { uniformStruct } from "../../src/gpu/uniforms.ts";
import { DecodeForwardParams } from "../../src/model/cpu_adapter/decode_forward.ts";
import { SamplingShapeParams } from "../../src/model/sampling.ts";
import { SoftmaxParams } from "../../src/ops/softmax.ts";

Deno.test("uniformStruct: WGSL with padding to 16 bytes, packed by name in declaration order", () => {
  const s = uniformStruct("test_params_a", "Params", [
    ["rows", "u32"],
    ["shift", "i32"],
    ["scale", "f32"],
    ["_gap", "u32"],
    ["cols", "u32"],
  ]);
  assertEquals(
    s.wgsl,
    "struct Params {\n  rows: u32, shift: i32, scale: f32, _gap: u32,\n" +
      "  cols: u32, _pad0: u32, _pad1: u32, _pad2: u32,\n}\n",
  );
  assertEquals(s.bytes, 32);
  const dv = new DataView(s.pack({ rows: 7, shift: -3, scale: 0.5, cols: 4294967295 }));
  assertEquals(dv.byteLength, 32);
  assertEquals(
    [dv.getUint32(0, true), dv.getInt32(4, true), dv.getFloat32(8, true), dv.getUint32(12, true)],
    [7, -3, 0.5, 0],
  );
  assertEquals([dv.getUint32(16, true), dv.getUint32(20, true)], [4294967295, 0]);
  // the smallest block is 16 bytes
  assertEquals(uniformStruct("test_params_b", "P", [["n", "u32"]]).pack({ n: 1 }).byteLength, 16);
});

Deno.test("uniformStruct: missing, fractional, negative or oversized values are named errors", () => {
  const s = uniformStruct("test_params_c", "Params", [["n", "u32"], ["x", "f32"]]);
  const bad = (v: Record<string, number>, what: string) =>
    assertThrows(() => s.pack(v as { n: number; x: number }), "KernelArgumentError", what);
  bad({ x: 1 }, "test_params_c.n must be an integer, got undefined");
  bad({ n: 1.5, x: 1 }, "test_params_c.n must be an integer");
  bad({ n: -1, x: 1 }, "test_params_c.n must fit a u32");
  bad({ n: 2 ** 32, x: 1 }, "test_params_c.n must fit a u32");
  bad({ n: 1, x: NaN }, "test_params_c.x must be a number");
  assertThrows(
    () => uniformStruct("test_params_d", "P", [["a", "u32"], ["a", "f32"]]),
    "Error",
    "field a twice",
  );
});

Deno.test("uniformStruct: a shader's `//! include NAME` line becomes the declaration", async () => {
  const text = await shaderSource("softmax");
  assertEquals(text.includes(SoftmaxParams.wgsl), true, text.slice(0, 400));
  assertEquals(text.includes("//! include"), false);
  // an include nobody registered is a named error that says where such names come from
  await assertRejects(
    () => shaderSource("test_missing_params"),
    "Error",
    "generated shaders and uniform structs are registered by the module that declares them",
  );
});

Deno.test("uniformStruct: a tail member the host writes itself follows the scalars", () => {
  const s = uniformStruct("test_params_e", "Params", [["rows", "u32"], ["eps", "f32"]], {
    tail: "layer: array<Layer, MAXL>",
  });
  assertEquals(
    s.wgsl,
    "struct Params {\n  rows: u32, eps: f32, _pad0: u32, _pad1: u32,\n  layer: array<Layer, MAXL>,\n}\n",
  );
  // pack writes the scalars only: the host puts the tail's bytes after them
  assertEquals(s.bytes, 16);
  assertEquals(s.pack({ rows: 3, eps: 0.5 }).byteLength, 16);
  assertThrows(
    () => uniformStruct("test_params_f", "P", [["n", "u32"]], { tail: "n: array<u32, 4>" }),
    "Error",
    "bad tail member",
  );
});

Deno.test("every shader's includes resolve once the shader CLI's modules are loaded", async () => {
  const names = shaderNames().map((s) => s.name);
  assert(names.length > 40, `${names.length} shaders`);
  for (const name of names) {
    const text = await shaderSource(name);
    assert(!text.includes("//! include"), `${name}: an include is left`);
    // each struct once, whatever the includes share
    const structs = [...text.matchAll(/^struct (\w+)/gm)].map((m) => m[1]);
    assertEquals(structs.length, new Set(structs).size, `${name}: a struct twice`);
  }
  // a struct included by an included shader: the fused decode takes the sampler's Shape
  const fused = await shaderSource("decode_forward");
  assert(fused.includes(SamplingShapeParams.wgsl) && fused.includes(DecodeForwardParams.wgsl));
});

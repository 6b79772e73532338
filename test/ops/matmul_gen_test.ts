// The generated matmul shaders (src/ops/matmul_gen.ts): one tile list feeds both the WGSL and the
// kernel specs, so every entry point a variant can ask for exists, every generated shader
// compiles on this adapter, and the shader CLI writes them out. Their arithmetic is checked
// against the float64 reference by the kernel tests (test/ops/kernels_test.ts).

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { shaderSource } from "../../src/gpu/shaders.ts";
import {
  kernelSpec,
  MATMUL_FORMS,
  MATMUL_VARIANTS,
  TEX_VARIANTS,
  textureSpec,
  variantSupports,
} from "../../src/ops/matmul.ts";
import { BIG_TILES, GROUP_TILES, MATMUL_SHADERS, REG_TILES } from "../../src/ops/matmul_gen.ts";
import { ROPE_TILES, TEX_TILES } from "../../src/ops/matmul_tex_gen.ts";
import { checkSmemTile, SMEM_TILES } from "../../src/ops/matmul_smem_gen.ts";

const entries = (wgsl: string) => new Set([...wgsl.matchAll(/\bfn (\w+)\(/g)].map((m) => m[1]));

Deno.test("matmul_gen: every entry point the kernel specs name is generated", async () => {
  const byShader = new Map<string, Set<string>>();
  for (const name of Object.keys(MATMUL_SHADERS)) {
    byShader.set(name, entries(await shaderSource(name)));
  }
  const need: { shader: string; entry: string }[] = [];
  for (const v of MATMUL_VARIANTS.filter((v) => v.kind === "reg")) {
    for (const form of MATMUL_FORMS) {
      // nn needs C % 4, tn R % 4 and C % 4 (the generator writes only those)
      if (form === "nn" && v.c! % 4 !== 0) continue;
      if (form === "tn" && (v.r! % 4 !== 0 || v.c! % 4 !== 0)) continue;
      need.push(kernelSpec(v, form));
    }
  }
  for (const v of TEX_VARIANTS) {
    for (const e of ["plain", "group", "swiglu"] as const) need.push(textureSpec(v, e));
    if (ROPE_TILES.some(([r, c]) => r === v.r && c === v.c)) need.push(textureSpec(v, "rope"));
  }
  for (const [r, c] of GROUP_TILES) need.push({ shader: "matmul_group", entry: `ntg_r${r}c${c}` });
  const smem = MATMUL_VARIANTS.filter((v) => v.kind === "smem");
  assertEquals(smem.map((v) => v.tile), [...SMEM_TILES]);
  for (const v of smem) for (const form of MATMUL_FORMS) need.push(kernelSpec(v, form));
  for (const { shader, entry } of need) {
    assert(byShader.get(shader)?.has(entry), `${shader} has no entry ${entry}`);
  }
  // and nothing is generated that no variant can use: each tile list entry is some variant's
  const tiles = new Set(MATMUL_VARIANTS.map((v) => `r${v.r}c${v.c}`));
  for (const [r, c] of [...REG_TILES, ...BIG_TILES]) {
    assert(tiles.has(`r${r}c${c}`), `tile r${r}c${c} is generated but no variant uses it`);
  }
  assertEquals(TEX_VARIANTS.map((v) => [v.r, v.c]), TEX_TILES.map(([r, c]) => [r, c]));
  assert(need.length > 60, `only ${need.length} entries checked`);
  // a reg variant with a big tile names the big shader, and it supports a fitting shape
  const big = MATMUL_VARIANTS.find((v) => v.r === 32 && v.c === 16)!;
  assertEquals(kernelSpec(big, "nn").shader, "matmul_reg_big");
  assert(variantSupports(big, { form: "nn", M: 64, N: 64, K: 64 }));
});

Deno.test("matmul_smem_gen: a tile it cannot write is a named error", () => {
  const bad = [
    { bm: 64, bn: 64, bk: 16, tm: 4, tn: 2 }, // TN not a multiple of 4
    { bm: 128, bn: 128, bk: 16, tm: 4, tn: 4 }, // 1024 invocations
    { bm: 128, bn: 128, bk: 32, tm: 8, tn: 8 }, // 32 KiB of workgroup memory
    { bm: 64, bn: 64, bk: 4, tm: 4, tn: 4 }, // a quarter vec4 load per invocation
  ];
  for (const t of bad) {
    assertThrows(() => checkSmemTile(t), "KernelArgumentError", "cannot be generated");
  }
  for (const t of SMEM_TILES) checkSmemTile(t);
});

Deno.test("matmul_gen: every generated shader compiles on this adapter", async () => {
  const gpu = await Gpu.create();
  try {
    for (const name of Object.keys(MATMUL_SHADERS)) {
      const module = gpu.device.createShaderModule({ label: name, code: await shaderSource(name) });
      const errors = (await module.getCompilationInfo()).messages.filter((m) => m.type === "error");
      assertEquals(errors.map((m) => `${m.lineNum}: ${m.message}`), [], name);
    }
  } finally {
    gpu.destroy();
  }
});

Deno.test("shader CLI: --list marks generated shaders, NAME prints the WGSL, unknown is exit 2", async () => {
  const run = async (...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "src/cli/shader.ts", ...args],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const dec = new TextDecoder();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  };
  const list = await run("--list");
  assertEquals(list.code, 0, list.stderr);
  assert(list.stdout.split("\n").includes("matmul_tex_rope (generated)"), list.stdout);
  assert(list.stdout.split("\n").includes("softmax"), list.stdout);
  const one = await run("matmul_reg");
  assertEquals(one.code, 0, one.stderr);
  assertEquals(one.stdout, await shaderSource("matmul_reg"));
  assert(one.stdout.includes("struct Params {"), "the uniform struct include is resolved");
  const bad = await run("matmul_nope");
  assertEquals(bad.code, 2);
  assert(bad.stderr.includes("no shader named matmul_nope"), bad.stderr);
});

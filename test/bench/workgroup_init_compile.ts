// How long the adapter's compiler takes for a kernel whose only content is one workgroup array
// (WGSL zero-initializes workgroup memory; naga's GLSL writer does it element by element, and
// llvmpipe's compile time grows faster than the element count: docs/benchmarks.md, "Shader
// compile time on the CPU adapters"). llvmpipe compiles at the first dispatch, so that is timed.
//
//   MESA_SHADER_CACHE_DISABLE=true deno run -A test/bench/workgroup_init_compile.ts WORDS [FORM] [WG]
//
// WORDS: 32-bit words in all; FORM: u32 | vec2 | vec4 | mat4 | split4 (four u32 arrays) | nested
// (arrays of 64 u32); WG: threads (default 64).

const FORMS: Record<string, { decl: string; body: string }> = {
  u32: {
    decl: "var<workgroup> a: array<u32, N>;",
    body: "a[lid] = lid; workgroupBarrier(); out[lid] = a[(lid * 7u) % N];",
  },
  vec2: {
    decl: "var<workgroup> a: array<vec2<u32>, N / 2u>;",
    body:
      "a[lid] = vec2(lid, 1u); workgroupBarrier(); let j = (lid * 7u) % (N / 2u); out[lid] = a[j].x + a[j].y;",
  },
  vec4: {
    decl: "var<workgroup> a: array<vec4<u32>, N / 4u>;",
    body:
      "a[lid] = vec4(lid); workgroupBarrier(); let j = (lid * 7u) % (N / 4u); out[lid] = a[j].x + a[j].w;",
  },
  mat4: {
    decl: "var<workgroup> a: array<mat4x4<f32>, N / 16u>;",
    body:
      "a[lid] = mat4x4<f32>(); workgroupBarrier(); let j = (lid * 7u) % (N / 16u); out[lid] = u32(a[j][0].x);",
  },
  split4: {
    decl: [0, 1, 2, 3].map((i) => `var<workgroup> a${i}: array<u32, N / 4u>;`).join("\n"),
    body:
      "a0[lid] = lid; a1[lid] = lid; a2[lid] = 1u; a3[lid] = 2u; workgroupBarrier(); let j = (lid * 7u) % (N / 4u); out[lid] = a0[j] + a1[j] + a2[j] + a3[j];",
  },
  nested: {
    decl: "var<workgroup> a: array<array<u32, 64>, N / 64u>;",
    body:
      "a[lid / 64u][lid % 64u] = lid; workgroupBarrier(); let j = (lid * 7u) % N; out[lid] = a[j / 64u][j % 64u];",
  },
};

const [wordsArg, form = "u32", wgArg = "64"] = Deno.args;
const words = Number(wordsArg), wg = Number(wgArg);
const f = FORMS[form];
if (!f || !(words >= 64 && words % 64 === 0) || !(wg >= 1 && wg <= words / 16)) {
  console.error(
    `usage: workgroup_init_compile.ts WORDS [${
      Object.keys(FORMS).join("|")
    }] [WG]; WORDS a multiple of 64, WG ≤ WORDS / 16`,
  );
  Deno.exit(2);
}
const code = `override N: u32 = 1024u;
override WG: u32 = 64u;
${f.decl}
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
  ${f.body}
}`;
const adapter = await navigator.gpu.requestAdapter();
if (!adapter) throw new Error("no WebGPU adapter");
const device = await adapter.requestDevice({
  requiredLimits: { maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize },
});
const module = device.createShaderModule({ code });
const pipeline = await device.createComputePipelineAsync({
  layout: "auto",
  compute: { module, entryPoint: "main", constants: { N: words, WG: wg } },
});
const out = device.createBuffer({
  size: 4 * wg,
  usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
});
const read = device.createBuffer({
  size: 4 * wg,
  usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
});
const t0 = performance.now();
const enc = device.createCommandEncoder();
const pass = enc.beginComputePass();
pass.setPipeline(pipeline);
pass.setBindGroup(
  0,
  device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: out } }],
  }),
);
pass.dispatchWorkgroups(1);
pass.end();
enc.copyBufferToBuffer(out, 0, read, 0, 4 * wg);
device.queue.submit([enc.finish()]);
await read.mapAsync(GPUMapMode.READ);
console.log(
  `${form}, ${words} words, ${wg} threads: first dispatch ${
    (performance.now() - t0).toFixed(0)
  } ms`,
);
device.destroy();

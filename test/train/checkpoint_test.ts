// Checkpoints: PEFT adapters with exactly PEFT's names, shapes and config; full HF model folders;
// optimizer moments that resume an AdamW run bit for bit; atomic folders that survive a process
// killed mid-write; and named errors for damaged or mismatched checkpoints.

import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { bytesSource, memoryFolder } from "../../src/io/bytesource.ts";
import { denoFolder, joinPath } from "../../src/io/deno_files.ts";
import {
  encodeSafetensors,
  SafetensorsCheckpoint,
  SafetensorsFile,
} from "../../src/io/safetensors.ts";
import { seededValues } from "../../src/ops/reference.ts";
import { AdamW, type AdamWRange } from "../../src/train/adamw.ts";
import { readCheckpoint } from "../../src/train/checkpoint.ts";
import {
  latestCheckpoint,
  listCheckpoints,
  loadCheckpoint,
  pruneCheckpoints,
  recoverInterrupted,
  writeCheckpoint,
} from "../../src/train/checkpoint_dir.ts";
import { loadPeftAdapter, type LoraAdapter, peftAdapterFiles } from "../../src/train/peft.ts";
import { contents, LORA, preset, randomAdapter, TOKENIZER } from "./ckpt_fixtures.ts";

function sameBits(a: Float32Array, b: Float32Array): boolean {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length),
    y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

function sameAdapter(a: LoraAdapter, b: LoraAdapter): boolean {
  const key = (m: { layer: number; module: string }) => `${m.layer}/${m.module}`;
  const byKey = new Map(b.modules.map((m) => [key(m), m]));
  return a.modules.length === b.modules.length &&
    a.modules.every((m) =>
      sameBits(m.a, byKey.get(key(m))!.a) && sameBits(m.b, byKey.get(key(m))!.b)
    );
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ckpt-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("PEFT adapter: exactly PEFT's file names, keys, shapes and config; bit-exact round trip", async () => {
  const cfg = await preset("tiny-qwen2");
  const adapter = randomAdapter(cfg, LORA, 1);
  const files = peftAdapterFiles(adapter, cfg);
  assertEquals([...files.keys()].sort(), ["adapter_config.json", "adapter_model.safetensors"]);
  const json = JSON.parse(new TextDecoder().decode(files.get("adapter_config.json")));
  for (
    const [k, v] of Object.entries({
      peft_type: "LORA",
      task_type: "CAUSAL_LM",
      r: 4,
      lora_alpha: 8,
      target_modules: ["down_proj", "o_proj", "q_proj", "v_proj"],
      base_model_name_or_path: "tests/tiny-qwen2",
      bias: "none",
      fan_in_fan_out: false,
      use_rslora: false,
      use_dora: false,
      modules_to_save: null,
      layers_to_transform: null,
    })
  ) assertEquals(json[k], v, `adapter_config.json ${k}`);
  const st = await SafetensorsFile.open(bytesSource(files.get("adapter_model.safetensors")!));
  const shapes = Object.fromEntries(st.names().map((n) => [n, [...st.info(n).shape]]));
  assert(st.names().length === 16, `2 layers × 4 modules × (A, B), got ${st.names().length}`);
  // hidden 64, 4 heads × 16 = 64, 2 kv heads × 16 = 32, intermediate 192
  for (
    const [k, shape] of Object.entries({
      "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": [4, 64],
      "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": [64, 4],
      "base_model.model.model.layers.1.self_attn.v_proj.lora_A.weight": [4, 64],
      "base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight": [32, 4],
      "base_model.model.model.layers.1.self_attn.o_proj.lora_A.weight": [4, 64],
      "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight": [4, 192],
      "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight": [64, 4],
    })
  ) assertEquals(shapes[k], shape, k);
  assertEquals(st.metadata.format, "pt");
  st.close();
  const back = await loadPeftAdapter(memoryFolder(files), cfg);
  assert(sameAdapter(adapter, back), "adapter weights changed in the round trip");
  assertEquals(back.settings.targetModules.slice().sort(), [...LORA.targetModules].sort());
});

Deno.test("PEFT adapter problems get named errors", async () => {
  const cfg = await preset("tiny-qwen2");
  const files = peftAdapterFiles(randomAdapter(cfg, LORA, 2), cfg);
  const withConfig = (patch: Record<string, unknown>) => {
    const json = JSON.parse(new TextDecoder().decode(files.get("adapter_config.json")));
    const f = new Map(files);
    f.set("adapter_config.json", new TextEncoder().encode(JSON.stringify({ ...json, ...patch })));
    return memoryFolder(f);
  };
  await assertRejects(
    () => loadPeftAdapter(withConfig({ use_dora: true }), cfg),
    "PeftFormatError",
    "use_dora",
  );
  await assertRejects(
    () => loadPeftAdapter(withConfig({ bias: "all" }), cfg),
    "PeftFormatError",
    "bias",
  );
  await assertRejects(
    () => loadPeftAdapter(withConfig({ target_modules: ".*proj" }), cfg),
    "PeftFormatError",
    "target_modules",
  );
  await assertRejects(
    () => loadPeftAdapter(withConfig({ target_modules: ["q_proj", "lm_head"] }), cfg),
    "PeftFormatError",
    "lm_head",
  );
  const st = await SafetensorsCheckpoint.open(memoryFolder(files), "adapter_model.safetensors");
  const tensors = await Promise.all(
    st.names().map(async (name) => ({
      name,
      shape: st.info(name).shape,
      data: await st.readF32(name),
    })),
  );
  st.close();
  const reencode = (ts: typeof tensors) =>
    memoryFolder(new Map([...files, ["adapter_model.safetensors", encodeSafetensors(ts)]]));
  const magnitude = {
    name: "base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector",
    shape: [64],
    data: new Float32Array(64),
  };
  await assertRejects(
    () => loadPeftAdapter(reencode([...tensors, magnitude]), cfg),
    "PeftFormatError",
    "unexpected tensors",
  );
  await assertRejects(
    () => loadPeftAdapter(reencode(tensors.slice(1)), cfg),
    "CheckpointMismatchError",
    "lacks",
  );
  const other = await preset("small-30m");
  await assertRejects(
    () => loadPeftAdapter(memoryFolder(files), other),
    "CheckpointMismatchError",
    "another model",
  );
  const bad = randomAdapter(cfg, LORA, 3);
  const broken: LoraAdapter = {
    ...bad,
    modules: bad.modules.map((m, i) => (i === 2 ? { ...m, a: m.a.subarray(1) } : m)),
  };
  assertThrows(() => peftAdapterFiles(broken, cfg), "CheckpointMismatchError", "does not belong");
  assertThrows(
    () => peftAdapterFiles({ ...bad, modules: bad.modules.slice(1) }, cfg),
    "CheckpointMismatchError",
    "one per (layer, target module)",
  );
});

Deno.test("full checkpoint on disk: model folder, tokenizer, adapter, optimizer and RNG round trip", async () => {
  await withTempDir(async (root) => {
    const dir = joinPath(root, "step-3");
    const c = await contents(3);
    await writeCheckpoint(dir, c);
    const cfg = await preset("tiny-qwen2");
    const back = await loadCheckpoint(dir, { base: cfg });
    assertEquals(back.state, c.state);
    const w = c.models!.tool.weights, bw = back.models.tool;
    assertEquals(bw.config, w.config);
    assert(sameBits(bw.data, w.data), "model weights changed");
    for (const [name, bytes] of TOKENIZER) {
      const got = await Deno.readFile(joinPath(dir, `models/tool/${name}`));
      assert(
        got.length === bytes.length && got.every((b, i) => b === bytes[i]),
        `${name} not copied verbatim`,
      );
    }
    assert(sameAdapter(c.adapters!.planner.adapter, back.adapters.planner), "adapter changed");
    const o = c.optimizers!.planner, bo = back.optimizers.planner;
    assertEquals(bo.step, o.step);
    assertEquals(bo.hyper, o.hyper);
    assert(
      o.moments.every((mv, i) =>
        sameBits(mv.m, bo.moments[i].m) && sameBits(mv.v, bo.moments[i].v)
      ),
      "moments changed",
    );
    // The adapter subfolder is a PEFT folder on its own (what vLLM / PEFT are pointed at).
    const alone = await loadPeftAdapter(denoFolder(joinPath(dir, "adapters/planner")), cfg);
    assert(sameAdapter(alone, back.adapters.planner), "adapter folder is not self-contained");
  });
});

function gpuRanges(
  gpu: Gpu,
  sizes: number[],
  seed: number,
): { ranges: AdamWRange[]; bufs: GPUBuffer[] } {
  const bufs: GPUBuffer[] = [];
  const ranges = sizes.map((n, i) => {
    const b = [gpu.upload(seededValues(n, seed + i)), gpu.zeros(n), gpu.zeros(n), gpu.zeros(n)];
    bufs.push(...b);
    return { params: b[0], grads: b[1], m: b[2], v: b[3], numel: n };
  });
  return { ranges, bufs };
}

async function adamStep(gpu: Gpu, opt: AdamW, ranges: AdamWRange[], step: number): Promise<void> {
  ranges.forEach((r, i) =>
    gpu.write(r.grads as GPUBuffer, seededValues(r.numel, 50 * step + i, -0.2, 0.2))
  );
  const rec = gpu.recorder();
  opt.encodeStep(rec, { ranges, lr: 0.01, step });
  rec.submit();
  await gpu.sync();
}

Deno.test("optimizer state survives a checkpoint bit for bit: the resumed run is identical", async () => {
  const gpu = await Gpu.create();
  try {
    await withTempDir(async (root) => {
      const sizes = [5000, 77];
      const opt = await AdamW.create(gpu, { numel: 6000, weightDecay: 0.05 });
      const a = gpuRanges(gpu, sizes, 1);
      for (const k of [1, 2]) await adamStep(gpu, opt, a.ranges, k);
      const saved = await opt.readState(a.ranges, 2);
      assert(
        saved.moments[0].v.some((x) => x > 0),
        "moments are still zero: nothing would be tested",
      );
      await writeCheckpoint(joinPath(root, "step-2"), {
        state: { step: 2, rng: [1, 2] },
        optimizers: { policy: saved },
      });
      const loaded = (await loadCheckpoint(joinPath(root, "step-2"))).optimizers.policy;
      // A fresh run: same parameters (restored separately), moments from the checkpoint.
      const b = gpuRanges(gpu, sizes, 99);
      for (let i = 0; i < sizes.length; i++) {
        gpu.write(
          b.ranges[i].params as GPUBuffer,
          await gpu.readFloat32(a.ranges[i].params, sizes[i]),
        );
      }
      opt.writeState(b.ranges, loaded);
      await adamStep(gpu, opt, a.ranges, 3);
      await adamStep(gpu, opt, b.ranges, 3);
      for (let i = 0; i < sizes.length; i++) {
        for (const k of ["params", "m", "v"] as const) {
          const x = await gpu.readFloat32(a.ranges[i][k], sizes[i]),
            y = await gpu.readFloat32(b.ranges[i][k], sizes[i]);
          assert(sameBits(x, y), `range ${i} ${k} differs after resuming`);
        }
      }
      assertThrows(
        () => opt.writeState(b.ranges.slice(1), loaded),
        "CheckpointMismatchError",
        "ranges",
      );
      opt.destroy();
      [...a.bufs, ...b.bufs].forEach((x) => x.destroy());
    });
  } finally {
    gpu.destroy();
  }
});

Deno.test("a process killed mid-write leaves the previous checkpoint intact", async () => {
  await withTempDir(async (root) => {
    const dir = joinPath(root, "step-1");
    const before = await contents(1);
    await writeCheckpoint(dir, before);
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("./crash_writer.ts", import.meta.url).pathname, dir, "2"],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!out.includes("WROTE")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    child.kill("SIGKILL");
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    await child.stderr.cancel();
    assert(
      out.includes("WROTE") && !out.includes("FINISHED"),
      `the child must die mid-write; it said: ${out}`,
    );
    const names = [];
    for await (const e of Deno.readDir(root)) names.push(e.name);
    assert(
      names.some((n) => n.startsWith(".step-1.tmp-")),
      `no half-written temp folder: ${names}`,
    );
    const back = await loadCheckpoint(dir, { base: await preset("tiny-qwen2") });
    assertEquals(back.state, before.state);
    assert(
      sameBits(back.models.tool.data, before.models!.tool.weights.data),
      "previous weights damaged",
    );
    assertEquals((await listCheckpoints(root)).map((c) => c.step), [1]);
    const done = await recoverInterrupted(root);
    assert(done.length === 1 && done[0].startsWith("removed .step-1.tmp-"), `recovery: ${done}`);
  });
});

Deno.test("an error mid-write, and a crash between the replace renames, are recovered", async () => {
  await withTempDir(async (root) => {
    const dir = joinPath(root, "best");
    const first = await contents(4);
    await writeCheckpoint(dir, first);
    let n = 0;
    const err = await assertRejects(() =>
      writeCheckpoint(dir, first, {
        onFile() {
          if (++n === 2) throw new Error("disk full");
        },
      })
    );
    assert(err.message === "disk full", err.message);
    const names: string[] = [];
    for await (const e of Deno.readDir(root)) names.push(e.name);
    assertEquals(names, ["best"], "temp folder left behind");
    // Replacing works, and a crash after moving the old folder aside is undone.
    await writeCheckpoint(dir, await contents(5));
    assertEquals((await loadCheckpoint(dir, { base: await preset("tiny-qwen2") })).state.step, 5);
    await Deno.rename(dir, joinPath(root, `.best.old-${crypto.randomUUID()}`));
    assert((await recoverInterrupted(root))[0] === "restored best", "old folder not restored");
    assertEquals((await loadCheckpoint(dir, { base: await preset("tiny-qwen2") })).state.step, 5);
  });
});

Deno.test("damaged checkpoints and wrong resumes get named errors", async () => {
  await withTempDir(async (root) => {
    const dir = joinPath(root, "step-7");
    await writeCheckpoint(dir, await contents(7));
    const cfg = await preset("tiny-qwen2");
    await assertRejects(() => loadCheckpoint(dir), "CheckpointMismatchError", "base model config");
    const file = joinPath(dir, "optimizer/planner.safetensors");
    const bytes = await Deno.readFile(file);
    await Deno.writeFile(file, bytes.subarray(0, bytes.length - 10));
    await assertRejects(
      () => loadCheckpoint(dir, { base: cfg }),
      "CheckpointCorruptError",
      "optimizer/planner.safetensors",
    );
    await Deno.remove(joinPath(dir, "checkpoint.json"));
    await assertRejects(
      () => readCheckpoint(denoFolder(dir)),
      "CheckpointNotFoundError",
      "interrupted",
    );
    await assertRejects(
      () => writeCheckpoint(joinPath(root, "x"), { state: { step: 1, rng: { s: NaN } } }),
      "TrainConfigError",
      "state.rng.s",
    );
  });
});

Deno.test("listing, latest and keep-last-N pruning", async () => {
  await withTempDir(async (root) => {
    for (const step of [10, 1, 2]) {
      await writeCheckpoint(joinPath(root, `step-${step}`), { state: { step, rng: null } });
    }
    await Deno.mkdir(joinPath(root, `.step-11.tmp-${crypto.randomUUID()}`));
    await Deno.mkdir(joinPath(root, "step-12")); // no manifest: not a checkpoint
    assertEquals((await listCheckpoints(root)).map((c) => c.step), [1, 2, 10]);
    assertEquals(await latestCheckpoint(root), joinPath(root, "step-10"));
    assertEquals(await pruneCheckpoints(root, 2), [joinPath(root, "step-1")]);
    assertEquals((await listCheckpoints(root)).map((c) => c.step), [2, 10]);
    await assertRejects(() => pruneCheckpoints(root, 0), "CheckpointError", "keepLast");
  });
});

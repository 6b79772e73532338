// `npx deno task tune` as a user runs it: it measures, writes the picks file for this adapter,
// and a later process on the same adapter runs those picks (train says so); a broken picks file
// stops a run at start-up with a named error that says what to do.

import { assert, assertEquals } from "../assert.ts";
import type { SamplerPick } from "../../src/ops/tuned_picks.ts";

const repo = new URL("../../", import.meta.url).pathname;
const dec = new TextDecoder();

async function deno(args: string[], env: Record<string, string> = {}) {
  const r = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: repo,
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: r.code, out: dec.decode(r.stdout), err: dec.decode(r.stderr) };
}

/** `tune` at one variant and short timings, inference only unless `more` gives --train-rows. */
function tune(model: string, out: string, decodeRows: string, ...more: string[]) {
  return deno([
    "run",
    "-A",
    "src/cli/tune.ts",
    ...["--model", model, "--decode-rows", decodeRows],
    ...(more.includes("--train-rows") ? [] : ["--train-rows", "0"]),
    ...["--variants", "^r8c8_wg8x1$", "--min-ms", "5", "--out", out, ...more],
  ]);
}

// Prints what a fresh process makes of the picks file: its log line and the nt:vector pick.
const PROBE = `
import { Gpu } from "./src/gpu/mod.ts";
import { describeTunedPicks } from "./src/ops/tuned_picks.ts";
import { matmulPicks } from "./src/ops/tuning.ts";
const gpu = await Gpu.create();
console.log(describeTunedPicks(gpu.ctx.info));
console.log(JSON.stringify(matmulPicks(gpu.ctx.info)));
gpu.destroy();
`;

Deno.test("tune CLI: writes this adapter's picks; a later process runs them; a broken file is a named error", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tune_cli_" });
  try {
    const file = `${dir}/picks.json`;
    const r = await tune("configs/models/tiny-llama.json", file, "1", "--json");
    assertEquals(r.code, 0, r.out + r.err);
    assert(r.out.includes("| nt:vector |"), r.out);
    const last = JSON.parse(r.out.trim().split("\n").at(-1)!);
    const saved = JSON.parse(await Deno.readTextFile(file));
    assertEquals(saved.entries.length, 1);
    assertEquals(saved.entries[0].picks, last.picks);
    assertEquals(Object.keys(last.picks), ["nt:vector"]);

    const probe = await deno(["eval", PROBE], { PETTINGLLMS_TUNED_PICKS: file });
    assertEquals(probe.code, 0, probe.err);
    const [line, picks] = probe.out.trim().split("\n");
    assert(line.startsWith("matmul picks: tuned on this adapter") && line.includes(file), line);
    assertEquals(JSON.parse(picks)["nt:vector"], last.picks["nt:vector"]);
    // Off: the built-in picks.
    const off = await deno(["eval", PROBE], { PETTINGLLMS_TUNED_PICKS: "off" });
    assert(off.out.startsWith("matmul picks: built-in"), off.out + off.err);

    // A broken file stops train before any work, naming the file and the way out.
    await Deno.writeTextFile(file, "{ not json");
    const t = await deno(
      [
        "run",
        "-A",
        "src/cli/train.ts",
        "--config",
        "configs/quickstart.json",
        "--set",
        `run.outDir=${dir}/runs`,
      ],
      { PETTINGLLMS_TUNED_PICKS: file },
    );
    assertEquals(t.code, 1, t.out + t.err);
    const text = t.out + t.err;
    assert(
      text.includes("TunedPicksError") && text.includes(file) && text.includes("deno task tune"),
      text,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tune CLI: the matmul picks are in the file before the kernel tuners start, so a run stopped there keeps them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tune_cli_early_" });
  try {
    const file = `${dir}/picks.json`, model = `${dir}/config.json`;
    const config = JSON.parse(await Deno.readTextFile(`${repo}configs/models/tiny-llama.json`));
    await Deno.writeTextFile(model, JSON.stringify({ ...config, vocab_size: 5000 }));
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "src/cli/tune.ts",
        ...["--model", model, "--decode-rows", "1", "--train-rows", "0"],
        ...["--variants", "^r8c8_wg8x1$", "--min-ms", "5", "--out", file, "--sampler", "on"],
      ],
      cwd: repo,
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "null",
    }).spawn();
    let out = "", saved = null;
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      out += chunk;
      if (out.includes("matmul picks written to")) {
        // Read at once: the sampler tuner (seconds) has not finished, so nothing else wrote it.
        saved = JSON.parse(await Deno.readTextFile(file));
        child.kill("SIGKILL");
        break;
      }
    }
    await child.status;
    assert(saved, `no "matmul picks written" line before the end:\n${out}`);
    assertEquals(saved.entries.length, 1);
    assertEquals(Object.keys(saved.entries[0].picks), ["nt:vector"]);
    assertEquals(saved.entries[0].samplerPicks, undefined);
    // Stopped in the sampler tuner: the file still holds the matmul picks, whole.
    const after = JSON.parse(await Deno.readTextFile(file));
    assertEquals(after.entries[0].picks, saved.entries[0].picks);
    assert(!out.includes("picks written to " + file + ": later runs"), out);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// A fresh process's Sampler on the same adapter, made for the tuned vocabulary: its split and
// its workgroup size.
const SAMPLER_PROBE = `
import { Gpu } from "./src/gpu/mod.ts";
import { Sampler } from "./src/model/sampling.ts";
import { describeTunedPicks } from "./src/ops/tuned_picks.ts";
const gpu = await Gpu.create();
const s = await Sampler.create(gpu, { lazy: true, vocab: 5000 });
console.log(describeTunedPicks(gpu.ctx.info));
console.log(JSON.stringify([s.chunksFor(5000), s.workgroupSize]));
gpu.destroy();
`;

Deno.test("tune CLI: --sampler on times the sampler's row split at the model's vocabulary; a later Sampler uses it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tune_cli_sampler_" });
  try {
    const file = `${dir}/picks.json`, model = `${dir}/config.json`;
    const config = JSON.parse(await Deno.readTextFile(`${repo}configs/models/tiny-llama.json`));
    await Deno.writeTextFile(model, JSON.stringify({ ...config, vocab_size: 5000 }));
    const r = await tune(model, file, "1,3", "--sampler", "on", "--json");
    assertEquals(r.code, 0, r.out + r.err);
    assert(r.out.includes("| workgroups a row | threads a workgroup | ms a step |"), r.out);
    const last = JSON.parse(r.out.trim().split("\n").at(-1)!);
    assertEquals(last.sampler.vocab, 5000);
    assertEquals(last.sampler.rows, [1, 3]);
    // Every power of two up to the capacity's 32 chunks was timed at the CPU adapters' 32
    // threads a workgroup (GPUs: 64, 128 and 256).
    const gpuClass = /^adapter: .*\[gpu/m.test(r.out);
    const sizes = gpuClass ? [64, 128, 256] : [32];
    assertEquals(
      last.sampler.times.map((t: SamplerPick) => `${t.rowChunks}x${t.workgroupSize}`),
      sizes.flatMap((wg) => [1, 2, 4, 8, 16, 32].map((c) => `${c}x${wg}`)),
    );
    const best: SamplerPick = last.sampler.best;
    const saved = JSON.parse(await Deno.readTextFile(file));
    assertEquals(saved.entries[0].samplerPicks, { "5000": best });

    const probe = await deno(["eval", SAMPLER_PROBE], { PETTINGLLMS_TUNED_PICKS: file });
    assertEquals(probe.code, 0, probe.err);
    const [line, shape] = probe.out.trim().split("\n");
    assert(
      line.includes(`sampler tuned: ${best.rowChunks} workgroup`) &&
        line.includes(`of ${best.workgroupSize} threads a row at vocabulary 5000`),
      line,
    );
    assertEquals(JSON.parse(shape), [best.rowChunks, best.workgroupSize]);

    // Tuning again without the sampler (off; auto, on CPU adapters) keeps the file's split.
    const again = await tune(model, file, "1", "--sampler", "off");
    assertEquals(again.code, 0, again.out + again.err);
    assert(!again.out.includes("workgroups a row"), again.out);
    const kept = JSON.parse(await Deno.readTextFile(file));
    assertEquals(kept.entries[0].samplerPicks, { "5000": best });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// A fresh process's LoRA adapters on the same adapter: the fused forward's target.
const LORA_PROBE = `
import { Gpu } from "./src/gpu/mod.ts";
import { parseModelConfig } from "./src/model/config.ts";
import { LoraAdapters } from "./src/model/lora.ts";
import { LoraLayout } from "./src/model/lora_layout.ts";
import { describeTunedPicks } from "./src/ops/tuned_picks.ts";
const gpu = await Gpu.create();
const cfg = parseModelConfig(JSON.parse(Deno.readTextFileSync("configs/models/tiny-llama.json")));
const layout = new LoraLayout(cfg, { rank: 4, alpha: 8, targets: ["q"], adapters: ["a"] });
const lora = await LoraAdapters.create(gpu, layout, 4);
console.log(describeTunedPicks(gpu.ctx.info));
console.log(lora.fusedTarget);
lora.destroy();
gpu.destroy();
`;

Deno.test("tune CLI: --lora on times the fused LoRA forward's column split; later adapters use it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tune_cli_lora_" });
  try {
    const file = `${dir}/picks.json`, model = `${dir}/config.json`;
    // A gate/up group of 2600 outputs, which the fused forward splits over up to 3 workgroups.
    const config = JSON.parse(await Deno.readTextFile(`${repo}configs/models/tiny-llama.json`));
    await Deno.writeTextFile(
      model,
      JSON.stringify({ ...config, hidden_size: 288, intermediate_size: 1300 }),
    );
    const r = await tune(model, file, "1,5", "--sampler", "off", "--lora", "on", "--json");
    assertEquals(r.code, 0, r.out + r.err);
    assert(r.out.includes("| fused LoRA: workgroups a dispatch | ms a step |"), r.out);
    const last = JSON.parse(r.out.trim().split("\n").at(-1)!);
    // At 1 and 2 row tiles: targets 1 (1, 1), 8 (3, 3: as the built-in 128) and 1024 (3, 3).
    assertEquals(last.lora.times.map((t: { target: number }) => t.target), [1, 128]);
    assertEquals(last.lora.rows, [1, 5]);
    const saved = JSON.parse(await Deno.readTextFile(file));
    assertEquals(saved.entries[0].loraFusedTarget, last.lora.best);
    assertEquals(saved.entries[0].loraFusedTimes.best, last.lora.best);

    const probe = await deno(["eval", LORA_PROBE], { PETTINGLLMS_TUNED_PICKS: file });
    assertEquals(probe.code, 0, probe.err);
    const [line, target] = probe.out.trim().split("\n");
    assert(line.includes(`fused LoRA tuned: ${last.lora.best} workgroups a dispatch`), line);
    assertEquals(Number(target), last.lora.best);

    // Tuning again without it (off; auto, on CPU adapters) keeps the file's target.
    const again = await tune(model, file, "1", "--sampler", "off", "--lora", "off");
    assertEquals(again.code, 0, again.out + again.err);
    assert(!again.out.includes("fused LoRA:"), again.out);
    const kept = JSON.parse(await Deno.readTextFile(file));
    assertEquals(kept.entries[0].loraFusedTarget, last.lora.best);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// A fresh process's attention kernels on the same adapter, at a 600-position cache.
const ATTENTION_PROBE = `
import { Gpu } from "./src/gpu/mod.ts";
import { AttentionKernels } from "./src/model/attention_kernels.ts";
import { describeTunedPicks } from "./src/ops/tuned_picks.ts";
const gpu = await Gpu.create();
const k = await AttentionKernels.create(gpu, 600, { headDim: 16, attentionVariant: "workgroup" });
console.log(describeTunedPicks(gpu.ctx.info));
console.log(JSON.stringify([k.splitRowHeads, k.attnSplit]));
gpu.destroy();
`;

Deno.test("tune CLI: --attention on times decode attention split and not; later attention kernels split as tuned", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tune_cli_attention_" });
  try {
    const file = `${dir}/picks.json`;
    const r = await tune(
      "configs/models/tiny-llama.json",
      file,
      "1,3",
      ...["--sampler", "off", "--attention", "on", "--context", "600", "--json"],
    );
    assertEquals(r.code, 0, r.out + r.err);
    assert(r.out.includes("| decode attention at 600 positions: rows | rows × heads |"), r.out);
    const last = JSON.parse(r.out.trim().split("\n").at(-1)!);
    // Spans 128 and 256 split a 600-position cache (512 in 2, 1024 not at all: 3 spans timed).
    assertEquals(last.attention.spans.map((s: { span: number }) => s.span), [128, 256, 512]);
    assertEquals(last.attention.calls.map((c: { rows: number }) => c.rows), [1, 3]);
    const best = last.attention.best;
    const saved = JSON.parse(await Deno.readTextFile(file));
    assertEquals(saved.entries[0].attentionSplit, best);

    const probe = await deno(["eval", ATTENTION_PROBE], { PETTINGLLMS_TUNED_PICKS: file });
    assertEquals(probe.code, 0, probe.err);
    const [line, shape] = probe.out.trim().split("\n");
    assert(line.includes("decode attention tuned: "), line);
    const [rowHeads, split] = JSON.parse(shape);
    assertEquals(rowHeads, best.rowHeads);
    assertEquals(split.splits > 0, best.rowHeads > 0);
    if (split.splits > 0) assertEquals(split.span, best.minSpan);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// A fresh process's policy loss head at tiny-llama's vocabulary on the same adapter.
const LOSS_PROBE = `
import { Gpu } from "./src/gpu/mod.ts";
import { PolicyLoss } from "./src/train/losses.ts";
const gpu = await Gpu.create();
const head = await PolicyLoss.create(gpu, { maxRows: 4, vocabSize: 264 });
console.log(head.workgroupSize);
head.destroy();
gpu.destroy();
`;

Deno.test("tune CLI: --loss on times the loss heads' lanes a row at the logit rows; later heads use it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tune_cli_loss_" });
  try {
    const file = `${dir}/picks.json`;
    const r = await tune(
      "configs/models/tiny-llama.json",
      file,
      "1",
      ...["--train-rows", "64", "--sampler", "off", "--loss", "on", "--json"],
    );
    assertEquals(r.code, 0, r.out + r.err);
    assert(r.out.includes("| loss head: lanes a row | ms a call |"), r.out);
    const last = JSON.parse(r.out.trim().split("\n").at(-1)!);
    assertEquals(last.loss.times.map((t: { workgroupSize: number }) => t.workgroupSize), [
      32,
      64,
      128,
      256,
    ]);
    assertEquals(last.loss.rows, 64);
    const saved = JSON.parse(await Deno.readTextFile(file));
    assertEquals(saved.entries[0].lossPicks, { "264": last.loss.best });
    const probe = await deno(["eval", LOSS_PROBE], { PETTINGLLMS_TUNED_PICKS: file });
    assertEquals(probe.code, 0, probe.err);
    assertEquals(Number(probe.out.trim()), last.loss.best);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

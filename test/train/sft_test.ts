// SFT end to end: JSONL records become exactly the loss masks TRL would give (checked token by
// token), bad lines name their file and line, the config names its bad fields, a short run on the
// tiny preset lowers the loss and writes the run folder, its eval loss matches a CPU reference,
// a stopped-and-resumed run repeats an uninterrupted one step for step, and the CLI exits 2 on
// bad arguments.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { denoFolder, joinPath, writeFilesAtomic } from "../../src/io/deno_files.ts";
import { demoJsonl, demonstrations } from "../../src/envs/demonstrations.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { hfFolderFiles, initModel } from "../../src/model/init.ts";
import { referenceLogprobs } from "../../src/model/reference.ts";
import { ByteTokenizer, loadTokenizer, type Tokenizer } from "../../src/model/tokenizer.ts";
import { loadModel } from "../../src/model/weights.ts";
import { listCheckpoints } from "../../src/train/checkpoint_dir.ts";
import { runSft } from "../../src/train/sft.ts";
import {
  describeSftConfigMarkdown,
  loadSftConfig,
  parseSftConfig,
  type SftConfig,
  SftConfigError,
} from "../../src/train/sft_config.ts";
import {
  DataOrder,
  encodeRecord,
  parseSftJsonl,
  type SftRecord,
  splitEval,
  truncateRecords,
} from "../../src/train/sft_data.ts";

const byte = new ByteTokenizer();
const BOS = 257, EOS = 258, IM_START = 259, IM_END = 260;
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));
const one = (line: string): SftRecord => parseSftJsonl(line, "t.jsonl")[0];

/** The target tokens that carry loss weight, decoded: what the model is taught to write. */
function taught(tok: Tokenizer, tokens: readonly number[], weights: readonly number[]): string {
  return tok.decode(tokens.slice(1).filter((_, t) => weights[t] > 0));
}

Deno.test("prompt/completion: loss on the completion and eos only", () => {
  // The prompt is encoded as rollouts and generate encode it: no bos added.
  const e = encodeRecord(byte, one(`{"prompt":"ab","completion":"cd"}`));
  assertEquals(e.tokens, [97, 98, 99, 100, EOS]);
  // weights[t] is for predicting tokens[t+1]: b (prompt) no; c, d, eos yes.
  assertEquals(e.weights, [0, 1, 1, 1]);
  // An empty prompt gets the bos, so the completion's first token is predicted too.
  const empty = encodeRecord(byte, one(`{"prompt":"","completion":"x"}`));
  assertEquals([empty.tokens, empty.weights], [[BOS, 120, EOS], [1, 1]]);
});

Deno.test("messages: loss exactly on the assistant turn as the chat template renders it", () => {
  const e = encodeRecord(
    byte,
    one(`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`),
  );
  const expected = [
    BOS,
    IM_START,
    ...ascii("user\nhi"),
    IM_END,
    10,
    IM_START,
    ...ascii("assistant\n"), // 22 prompt tokens
    ...ascii("yo"),
    IM_END,
    10,
  ];
  assertEquals(e.tokens, expected);
  assertEquals(e.weights, [...new Array(21).fill(0), 1, 1, 1, 1]);
});

Deno.test("messages: several assistant turns are taught, user and system turns are not", () => {
  const rec = one(JSON.stringify({
    messages: [
      { role: "system", content: "S" },
      { role: "user", content: "U1" },
      { role: "assistant", content: "A1" },
      { role: "user", content: "U2" },
      { role: "assistant", content: "A2" },
    ],
  }));
  const e = encodeRecord(byte, rec);
  assertEquals(taught(byte, e.tokens, e.weights), "A1<|im_end|>\nA2<|im_end|>\n");
  assertEquals(e.weights.length, e.tokens.length - 1);
});

Deno.test("messages through an HF tokenizer (tiny-bpe ChatML): the assistant span is found", async () => {
  const tok = await loadTokenizer(
    denoFolder(new URL("../fixtures/tiny-bpe", import.meta.url).pathname),
  );
  const e = encodeRecord(
    tok,
    one(
      `{"messages":[{"role":"user","content":"the cat"},{"role":"assistant","content":"the hat"}]}`,
    ),
  );
  assertEquals(taught(tok, e.tokens, e.weights), "the hat<|im_end|>\n");
  assertEquals(
    e.tokens,
    tok.encodeChat([{ role: "user", content: "the cat" }, {
      role: "assistant",
      content: "the hat",
    }]),
  );
});

Deno.test("bad JSONL lines: a named error with the file and line", () => {
  const cases: [string, string][] = [
    [`{"prompt":"a","completion":"b"}\n\n{not json`, "not valid JSON"],
    [`{"prompt":"a","completion":"b"}\n\n{"prompt":"a"}`, `needs string "prompt" and "completion"`],
    [
      `{"prompt":"a","completion":"b"}\n\n{"prompt":"a","completions":"b"}`,
      "unknown key(s) completions",
    ],
    [
      `{"prompt":"a","completion":"b"}\n\n{"messages":[{"role":"user","content":"x"}]}`,
      `no "assistant" message`,
    ],
    [`{"prompt":"a","completion":"b"}\n\n{"messages":[{"role":"user"}]}`, "messages[0]"],
    [`{"prompt":"a","completion":"b"}\n\n[1,2]`, "expected a JSON object"],
  ];
  for (const [text, why] of cases) {
    const err = assertThrows(() => parseSftJsonl(text, "data/demo.jsonl"), "SftDataError", why) as
      & Error
      & { line: number; file: string };
    assertEquals([err.file, err.line], ["data/demo.jsonl", 3], why);
    assert(err.message.startsWith("data/demo.jsonl:3: "), err.message);
  }
  assertEquals(
    parseSftJsonl(`\n{"prompt":"a","completion":"b"}\n\n`, "f").map((r) => r.source.line),
    [2],
  );
});

Deno.test("truncation cuts to maxLen and drops records left without loss tokens", () => {
  const long = encodeRecord(byte, one(`{"prompt":"ab","completion":"cdefg"}`)); // 8 tokens
  const noRoom = encodeRecord(byte, one(`{"prompt":"abcdefgh","completion":"x"}`));
  const fits = encodeRecord(byte, one(`{"prompt":"a","completion":"b"}`));
  const r = truncateRecords([long, noRoom, fits], 5);
  assertEquals([r.kept.length, r.truncated, r.dropped.map((s) => s.line)], [2, 1, [1]]);
  assertEquals(r.kept[0].tokens, [97, 98, 99, 100, 101]);
  assertEquals(r.kept[0].weights, [0, 1, 1, 1]);
  assertEquals(r.kept[1], fits);
});

Deno.test("held-out split and data order: seeded, disjoint, and resumable from their state", () => {
  const s = splitEval(20, 0.25, 7);
  assertEquals([s.train.length, s.eval.length], [15, 5]);
  assert(s.eval.every((i) => !s.train.includes(i)));
  assertEquals(splitEval(20, 0.25, 7), s);
  assert(
    JSON.stringify(splitEval(20, 0.25, 8)) !== JSON.stringify(s),
    "the seed should move the split",
  );
  const a = new DataOrder(5, { seed: 3, epoch: 0, cursor: 0 });
  const first = a.next(7); // spans the epoch boundary
  assertEquals([...first.slice(0, 5)].sort(), [0, 1, 2, 3, 4]);
  const resumed = new DataOrder(5, a.state);
  assertEquals(resumed.next(9), a.next(9));
});

Deno.test("config: defaults, --set overrides, and errors that name the field", () => {
  const base = { data: { train: ["x.jsonl"] } };
  const c = parseSftConfig(base, {
    sets: ["update.optimizer.lr=0.01", "run.steps=5", "update.lora.targets=q,v"],
    source: "configs/sft/demo.json",
  });
  assertEquals([c.update.optimizer.lr, c.run.steps, c.update.lora.targets, c.run.name], [0.01, 5, [
    "q",
    "v",
  ], "demo"]);
  const bad = (raw: unknown, field: string, sets: string[] = []) => {
    const e = assertThrows(() => parseSftConfig(raw, { sets }), "SftConfigError") as SftConfigError;
    assertEquals(e.field, field, e.message);
    return e.message;
  };
  assert(bad({ ...base, updat: {} }, "updat").includes(`did you mean "update"`));
  bad({ ...base, update: { batchSize: 0 } }, "update.batchSize");
  bad({ ...base, update: { mode: "qlora" } }, "update.mode");
  bad({ ...base, update: { lora: { targets: ["q", "qq"] } } }, "update.lora.targets");
  bad({ ...base, data: { train: ["x"], maxSeqLen: 2048 } }, "update.microBatchRows");
  bad({}, "data.train");
  assert(bad({ data: { train: ["x.jsonl", "x.jsonl"] } }, "data.train").includes("repeat"));
  assert(bad({ data: { train: "x.jsonl" } }, "data.train").includes("list of file paths"));
  assert(bad(base, "update.lora.targetz", ["update.lora.targetz=q"]).includes(`"targets"`));
  bad({ ...base, model: { folder: "m", preset: "tiny-llama" } }, "model");
  bad({ ...base, eval: { everySteps: 5 } }, "eval.everySteps");
  bad(base, "run.stepz", ["run.stepz=3"]);
  // A folder alone replaces the default preset.
  assertEquals(parseSftConfig({ ...base, model: { folder: "m" } }).model, {
    preset: null,
    folder: "m",
  });
});

Deno.test("configs/sft: README documents every field; shipped configs are valid", async () => {
  const root = new URL("../../configs/sft/", import.meta.url).pathname;
  const readme = await Deno.readTextFile(joinPath(root, "README.md"));
  assert(
    readme.includes(describeSftConfigMarkdown()),
    "configs/sft/README.md's table is stale: paste describeSftConfigMarkdown()",
  );
  let n = 0;
  for await (const e of Deno.readDir(root)) {
    if (!e.name.endsWith(".json")) continue;
    const c = await loadSftConfig(joinPath(root, e.name));
    assert(c.data.maxSeqLen <= c.update.microBatchRows);
    n++;
  }
  assert(n >= 1, "configs/sft ships no config");
});

/** Tic-tac-toe demonstrations (short: about 25 tokens each) plus two chat records. */
async function writeData(dir: string): Promise<string> {
  const demos = demonstrations(getEnv("tic_tac_toe_v1"), { episodes: 6, style: "compact" });
  const chat = [1, 2].map((k) =>
    JSON.stringify({
      messages: [{ role: "user", content: `move ${k}?` }, {
        role: "assistant",
        content: `#### ${k}`,
      }],
    }) + "\n"
  );
  const path = joinPath(dir, "ttt.jsonl");
  await Deno.writeTextFile(path, demoJsonl(demos.records) + chat.join(""));
  return path;
}

function tinyConfig(data: string, outDir: string, over: Record<string, unknown>): SftConfig {
  return parseSftConfig({
    model: over.model ?? { preset: "tiny-llama" },
    data: { train: [data], maxSeqLen: 64 },
    update: {
      mode: "full",
      optimizer: { lr: 0.01 },
      schedule: { kind: "constant" },
      batchSize: 4,
      microBatchRows: 128,
      microBatchSeqs: 4,
      ...(over.update as object ?? {}),
    },
    eval: over.eval ?? { fraction: 0 },
    run: { outDir, name: "t", seed: 5, ...(over.run as object ?? {}) },
  });
}

const metricsOf = async (dir: string) =>
  (await Deno.readTextFile(joinPath(dir, "metrics.jsonl"))).trim().split("\n").map((l) =>
    JSON.parse(l) as Record<string, number>
  );

Deno.test("sft runs: loss falls, run folder, eval matches a CPU reference, exact resume", async (t) => {
  const gpu = await Gpu.create();
  const tmp = await Deno.makeTempDir({ prefix: "sft_test_" });
  try {
    const data = await writeData(tmp);

    await t.step(
      "full mode: the loss falls clearly and the run folder has every file",
      async () => {
        const cfg = tinyConfig(data, tmp, {
          eval: { fraction: 0.2, everySteps: 4 },
          run: { steps: 8, checkpointEvery: 4, keepLast: 1 },
        });
        const res = await runSft({ config: cfg, gpu });
        const m = await metricsOf(res.runDir);
        assertEquals(m.map((x) => x.step), [1, 2, 3, 4, 5, 6, 7, 8]);
        for (const k of ["loss", "tokens", "lr", "grad_norm", "seconds", "tokens_per_s"]) {
          assert(Number.isFinite(m[0][k]), `metrics lack ${k}`);
        }
        assertEquals(
          m.filter((x) => "eval_loss" in x).map((x) => x.step),
          [4, 8],
        );
        assert(
          m[7].loss < 0.5 * m[0].loss,
          `loss ${m[0].loss.toFixed(3)} → ${m[7].loss.toFixed(3)} should at least halve`,
        );
        assertEquals(
          (await listCheckpoints(joinPath(res.runDir, "checkpoints"))).map((c) => c.step),
          [8],
        ); // keepLast 1
        assertEquals(
          JSON.parse(await Deno.readTextFile(joinPath(res.runDir, "config.json"))),
          JSON.parse(JSON.stringify(cfg)),
        );
        const summary = await Deno.readTextFile(joinPath(res.runDir, "summary.log"));
        assert(summary.includes("split:") && summary.includes("done: 8 steps"), summary);
        // final/model is a complete HF folder; its eval loss recomputed on the CPU matches the GPU's.
        const folder = denoFolder(joinPath(res.exportDir!, "model"));
        const [w, tok] = [await loadModel(folder), await loadTokenizer(folder)];
        assertEquals(tok.kind, "byte");
        const recs = parseSftJsonl(await Deno.readTextFile(data), data).map((r) =>
          encodeRecord(tok, r)
        );
        let nll = 0, n = 0;
        for (const i of splitEval(recs.length, 0.2, 5).eval) {
          const lp = referenceLogprobs(w, recs[i].tokens);
          recs[i].weights.forEach((wt, k) => [nll -= wt * lp[k], n += wt]);
        }
        assert(
          Math.abs(nll / n - m[7].eval_loss) < 1e-3 * Math.max(1, nll / n),
          `eval loss ${m[7].eval_loss} vs reference ${nll / n}`,
        );
      },
    );

    await t.step(
      "LoRA on an HF folder: stop at step 2 + resume repeats the uninterrupted run's steps 3 and 4",
      async () => {
        const folder = joinPath(tmp, "base");
        const json = JSON.parse(
          await Deno.readTextFile(new URL("../../configs/models/tiny-llama.json", import.meta.url)),
        );
        await writeFilesAtomic(
          folder,
          hfFolderFiles(initModel(parseModelConfig(json), { seed: 9 })),
        );
        const cfg = tinyConfig(data, tmp, {
          model: { folder },
          update: { mode: "lora", optimizer: { lr: 0.02 }, lora: { rank: 4, alpha: 8 } },
          run: { steps: 4, name: "lora" },
        });
        const whole = await runSft({ config: cfg, gpu });
        const part = await runSft({ config: cfg, gpu, stopAfter: 2 });
        assertEquals([part.stopped, part.steps, part.exportDir], [true, 2, null]);
        const resumed = await runSft({ config: cfg, gpu, resumeDir: part.runDir });
        assertEquals([resumed.runDir, resumed.stopped, resumed.steps], [part.runDir, false, 4]);
        const [a, b] = [await metricsOf(whole.runDir), await metricsOf(part.runDir)];
        assertEquals(b.map((x) => x.step), [1, 2, 3, 4]);
        for (const i of [2, 3]) {
          assertEquals(
            [b[i].loss, b[i].grad_norm, b[i].lr],
            [a[i].loss, a[i].grad_norm, a[i].lr],
            `step ${i + 1}`,
          );
        }
        const adapter = JSON.parse(
          await Deno.readTextFile(joinPath(resumed.exportDir!, "adapter/adapter_config.json")),
        );
        assertEquals([adapter.r, adapter.base_model_name_or_path], [4, folder]);
        // The merged model keeps the base folder's tokenizer files and differs from the base.
        const mergedDir = denoFolder(joinPath(resumed.exportDir!, "model"));
        assertEquals((await loadTokenizer(mergedDir)).kind, "byte");
        const [merged, baseW] = [await loadModel(mergedDir), await loadModel(denoFolder(folder))];
        assert(merged.data.some((x, i) => x !== baseW.data[i]), "the adapter was not merged");
      },
    );
  } finally {
    gpu.destroy();
    await Deno.remove(tmp, { recursive: true });
  }
});

async function exitCode(script: string, args: string[]): Promise<{ code: number; stderr: string }> {
  const cmd = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, ...args],
    stdout: "null",
    stderr: "piped",
  });
  const out = await cmd.output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test("the sft and demos CLIs exit 2 on bad arguments and 0 on --help", async () => {
  const sft = new URL("../../src/cli/sft.ts", import.meta.url).pathname;
  const demos = new URL("../../src/cli/demos.ts", import.meta.url).pathname;
  const cases: [string, string[], number, string][] = [
    [sft, ["--bogus"], 2, "unknown flag --bogus"],
    [sft, [], 2, "--config FILE"],
    [sft, ["--config", "a.json", "--resume", "runs/x"], 2, "not both"],
    [sft, ["--config", "a.json", "--set"], 2, "--set needs a value"],
    [sft, ["--config", "a.json", "--set", "lr"], 2, "expected path=value"],
    [sft, ["--config", "a.json", "--set", "updat.lr=1"], 2, `did you mean "update"`],
    [sft, ["--config", "a.json", "--set", "run.steps=many"], 2, "not a number"],
    [sft, ["--config", "/nonexistent/a.json"], 2, "cannot read it"], // a file that is not there: bad input
    [sft, ["--help"], 0, ""],
    [demos, ["--env", "plan_path_v1"], 2, "--episodes is required"],
    [demos, ["--env", "plan_path_v1", "--episodes", "0"], 2, "at least 1"],
    [demos, ["--env", "chess_v1", "--episodes", "1"], 2, "expected one of"],
    [demos, ["--env", "plan_path_v1", "--episodes", "1", "--agents", "ghost"], 2, "no agent ghost"],
    [demos, ["--env", "plan_path_v1", "--episodes", "1", "--difficulty", "[1]"], 2, "JSON object"],
  ];
  const results = await Promise.all(cases.map(([s, args]) => exitCode(s, args)));
  results.forEach((r, i) => {
    const [, args, code, text] = cases[i];
    assertEquals(r.code, code, `${args.join(" ")}: ${r.stderr}`);
    assert(r.stderr.includes(text), `${args.join(" ")}: stderr lacks "${text}": ${r.stderr}`);
  });
});

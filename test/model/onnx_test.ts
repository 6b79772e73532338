// The ONNX side: protobuf bytes by hand, the shared CLI parser, exported graphs run by
// onnxruntime-web (wasm) against the float64 reference for llama / qwen2 / qwen3 (tolerance:
// max |ort − ref| ≤ 1e-4 · max |ref|, float32 against float64), the KV-cache graph decoding
// step by step against the full graph, and the export / init-model commands end to end.

import assert from "node:assert/strict";
import { camel, defineCli, parseArgs, usage } from "../../src/cli/cli_args.ts";
import { splitSets } from "../../src/cli/train.ts";
import { denoFolder } from "../../src/io/deno_files.ts";
import { type ModelConfig, parseModelConfig } from "../../src/model/config.ts";
import { initModel } from "../../src/model/init.ts";
import { exportOnnx } from "../../src/model/onnx/export.ts";
import { argmaxLast, type Logits, OrtDecoder } from "../../src/model/onnx/ort_runner.ts";
import { encodeTensor, varint } from "../../src/model/onnx/proto.ts";
import { referenceForward } from "../../src/model/reference.ts";
import { loadModel, type ModelWeights } from "../../src/model/weights.ts";

/** The repo root, so the test runs from any working directory. */
const ROOT = new URL("../../", import.meta.url).pathname;
const DENO = `${ROOT}node_modules/deno/deno`;
/** f32 graph vs f64 reference, relative to the largest reference logit. */
const REL_TOL = 1e-4;

function preset(name: string, extra: Record<string, unknown> = {}): ModelConfig {
  const json = JSON.parse(Deno.readTextFileSync(`${ROOT}configs/models/${name}.json`));
  return parseModelConfig({ ...json, ...extra });
}

/**
 * Weights large enough that attention is far from uniform (std 0.1), with norms ≠ 1 and
 * non-zero biases so that a skipped or swapped tensor changes the logits.
 */
function model(cfg: ModelConfig, plain = false): ModelWeights {
  return initModel(cfg, {
    seed: 7,
    std: 0.1,
    normNoise: plain ? 0 : 0.3,
    biasStd: plain ? 0 : 0.1,
  });
}

const IDS = [
  [257, 72, 101, 108, 108, 111, 32, 119, 258],
  [3, 200, 200, 17, 263, 0, 99, 150, 42],
];

/** Largest |a − b| over the batch of reference rows, and the largest |ref|. */
function compare(ort: Logits, refs: readonly ArrayLike<number>[]) {
  let diff = 0, scale = 0;
  refs.forEach((ref, b) => {
    assert.equal(ref.length, ort.seq * ort.vocab);
    for (let i = 0; i < ref.length; i++) {
      diff = Math.max(diff, Math.abs(ort.data[b * ref.length + i] - ref[i]));
      scale = Math.max(scale, Math.abs(ref[i]));
    }
  });
  return { diff, scale };
}

Deno.test("proto: varints and a TensorProto, byte for byte", () => {
  assert.deepEqual([...varint(0)], [0]);
  assert.deepEqual([...varint(300)], [0xac, 0x02]);
  // int64 -1: two's complement over 64 bits, ten bytes
  assert.deepEqual([...varint(-1)], [...Array(9).fill(0xff), 0x01]);
  assert.deepEqual([...varint(2n ** 40n)], [0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
  assert.throws(() => varint(1.5), RangeError);
  const t = encodeTensor({ name: "w", dtype: "FLOAT", dims: [2], data: Float32Array.of(1, -2) });
  assert.deepEqual([...t.concat()], [
    0x08,
    2, // dims: 2
    0x10,
    1, // data_type: FLOAT
    0x42,
    1,
    0x77, // name: "w"
    0x4a,
    8,
    0,
    0,
    0x80,
    0x3f,
    0,
    0,
    0,
    0xc0, // raw_data: 1.0f, -2.0f little-endian
  ]);
  assert.throws(
    () => encodeTensor({ name: "x", dtype: "FLOAT", dims: [3], data: new Float32Array(2) }),
    { name: "OnnxExportError" },
  );
});

const TEST_CLI = defineCli({
  command: "test",
  summary: "a test command",
  flags: {
    model: { type: "string", required: true, metavar: "DIR", help: "model" },
    "kv-cache": { type: "boolean", help: "switch" },
    batch: { type: "number", integer: true, min: 1, default: 4, help: "rows" },
    dtype: { type: "string", choices: ["F32", "BF16"], help: "dtype" },
  },
});

Deno.test("cli_args: typed values, defaults, and usage errors that name the flag", () => {
  const a = parseArgs(TEST_CLI, ["--model", "m", "--kv-cache", "--batch=8"]);
  assert.deepEqual(a, { help: false, model: "m", kvCache: true, batch: 8 });
  const b = parseArgs(TEST_CLI, ["--model=x", "--dtype", "BF16"]);
  assert.deepEqual(b, { help: false, model: "x", dtype: "BF16", kvCache: false, batch: 4 });
  assert.equal(parseArgs(TEST_CLI, ["--help"]).help, true); // required flags not enforced
  const bad: [string[], string][] = [
    [[], "--model is required"],
    [["--model"], "--model needs a value"],
    [["--model", "--kv-cache"], "--model needs a value"],
    [["--model", "m", "--bogus"], "unknown flag --bogus"],
    [["--model", "m", "--batch", "0"], "at least 1"],
    [["--model", "m", "--batch", "2.5"], "integer"],
    [["--model", "m", "--batch", "x"], "not a number"],
    [["--model", "m", "--dtype", "F8"], "one of F32, BF16"],
    [["--model", "m", "--model", "n"], "given twice"],
    [["--model", "m", "stray"], "unexpected argument"],
    [["--model", "m", "--kv-cache=1"], "takes no value"],
  ];
  for (const [argv, msg] of bad) {
    assert.throws(() => parseArgs(TEST_CLI, argv), (e: Error) => {
      assert.equal(e.name, "UsageError");
      assert.ok(e.message.includes(msg), `${argv.join(" ")}: "${e.message}" lacks "${msg}"`);
      return true;
    });
  }
  assert.equal(camel("max-new-tokens"), "maxNewTokens");
  const text = usage(TEST_CLI);
  assert.ok(text.startsWith("usage: test --model DIR [--kv-cache] [--batch N] [--dtype VALUE]"));
  assert.ok(text.includes("(default 4)") && text.includes("(one of F32, BF16)"), text);
});

Deno.test("cli_args: a repeatable flag joins its values in order (train and eval's --set)", () => {
  const spec = {
    command: "test",
    summary: "",
    flags: { set: { type: "string" as const, help: "", repeatable: { joinWith: "," } } },
  };
  assert.equal(
    parseArgs(spec, ["--set", "a.b=1", '--set=c={"x":1,"y":2}']).set,
    'a.b=1,c={"x":1,"y":2}',
  );
  assert.deepEqual(splitSets(parseArgs(spec, ["--set", "a.b=1", "--set", 'c={"x":1,"y":2}']).set), [
    "a.b=1",
    'c={"x":1,"y":2}',
  ]);
  assert.ok(usage(spec).includes("(repeatable)"));
});

const CASES: [string, ModelConfig][] = [
  ["tiny-llama (tied head, GQA 4/2)", preset("tiny-llama")],
  [
    "llama + attention_bias (q/k/v/o biases, untied)",
    preset("tiny-llama", {
      attention_bias: true,
      tie_word_embeddings: false,
    }),
  ],
  ["tiny-qwen2 (q/k/v biases, untied)", preset("tiny-qwen2")],
  ["tiny-qwen3 (q/k norm, head_dim 32 ≠ hidden/heads)", preset("tiny-qwen3")],
];

for (const [label, cfg] of CASES) {
  Deno.test(`onnx full graph = float64 reference: ${label}`, async () => {
    const w = model(cfg);
    const dec = await OrtDecoder.create(exportOnnx(w), cfg);
    try {
      assert.equal(dec.kvCache, false);
      const out = await dec.logits(IDS);
      assert.deepEqual([out.batch, out.seq, out.vocab], [2, IDS[0].length, cfg.vocabSize]);
      const { diff, scale } = compare(out, IDS.map((ids) => referenceForward(w, ids).logits));
      assert.ok(scale > 1, `logits too small (${scale}) for a meaningful relative tolerance`);
      assert.ok(diff <= REL_TOL * scale, `max |ort - ref| = ${diff} > ${REL_TOL} · ${scale}`);
      // The tolerance is tight enough to see the norms and biases: the same model without
      // them (every other tensor identical) is far outside it.
      const plain = model(cfg, true);
      const off = compare(out, IDS.map((ids) => referenceForward(plain, ids).logits));
      assert.ok(off.diff > 100 * REL_TOL * scale, `norm/bias change invisible: ${off.diff}`);
    } finally {
      await dec.release();
    }
  });
}

for (const name of ["tiny-llama", "tiny-qwen3"]) {
  Deno.test(`onnx KV-cache graph, prefill then one token at a time = full graph: ${name}`, async () => {
    const cfg = preset(name);
    const w = model(cfg);
    const full = await OrtDecoder.create(exportOnnx(w), cfg);
    const kv = await OrtDecoder.create(exportOnnx(w, { kvCache: true }), cfg);
    try {
      assert.equal(kv.kvCache, true);
      const want = await full.logits(IDS);
      const T = IDS[0].length, V = cfg.vocabSize;
      const maxAbs = want.data.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
      const tol = 1e-5 * maxAbs;
      // the KV graph from an empty cache is the full graph
      const whole = await kv.logits(IDS);
      const rows = [0, 1].map((b) => want.data.subarray(b * T * V, (b + 1) * T * V));
      assert.ok(compare(whole, rows).diff <= tol, "KV graph from an empty cache ≠ full graph");
      const cache = kv.emptyCache(2);
      const pre = await kv.step(cache, IDS.map((r) => r.slice(0, 4)));
      assert.equal(cache.length, 4);
      const steps: Logits[] = [pre];
      for (let t = 4; t < T; t++) steps.push(await kv.step(cache, IDS.map((r) => [r[t]])));
      assert.equal(cache.length, T);
      for (let b = 0; b < 2; b++) {
        let t = 0;
        for (const s of steps) {
          for (let j = 0; j < s.seq; j++, t++) {
            for (let v = 0; v < V; v++) {
              const got = s.data[(b * s.seq + j) * V + v], exp = want.data[(b * T + t) * V + v];
              assert.ok(
                Math.abs(got - exp) <= tol,
                `row ${b} pos ${t} token ${v}: ${got} vs ${exp}`,
              );
            }
          }
        }
      }
      assert.deepEqual(argmaxLast(steps.at(-1)!), argmaxLast(want));
    } finally {
      await Promise.all([full.release(), kv.release()]);
    }
  });
}

Deno.test("onnx runner: transformers.js names, and named errors that say what to do", async () => {
  const cfg = preset("tiny-llama");
  const w = model(cfg);
  const kv = await OrtDecoder.create(exportOnnx(w, { kvCache: true, maxPositions: 6 }), cfg);
  const full = await OrtDecoder.create(exportOnnx(w), cfg);
  try {
    assert.deepEqual(kv.inputNames, [
      "input_ids",
      "position_ids",
      ...[0, 1].flatMap((l) => [`past_key_values.${l}.key`, `past_key_values.${l}.value`]),
    ]);
    assert.deepEqual(kv.outputNames, [
      "logits",
      ...[0, 1].flatMap((l) => [`present.${l}.key`, `present.${l}.value`]),
    ]);
    assert.deepEqual(full.inputNames, ["input_ids"]);
    const rejects = async (fn: () => Promise<unknown>, msg: RegExp) => {
      await assert.rejects(fn, (e: Error) => e.name === "OrtRuntimeError" && msg.test(e.message));
    };
    await rejects(() => kv.logits([[1, 2, 3, 4, 5, 6, 7]]), /larger --max-positions/);
    await rejects(() => full.logits([[1, 264]]), /token 264 .* outside \[0, 264\)/);
    await rejects(() => full.logits([[1, -1]]), /outside/);
    await rejects(() => full.logits([[1, 2], [3]]), /same-length batches/);
    await rejects(() => full.step(full.emptyCache(1), [[1]]), /export with --kv-cache/);
    await rejects(() => kv.step(kv.emptyCache(2), [[1]]), /1 rows for a cache of batch 2/);
    await rejects(
      () => OrtDecoder.create(Uint8Array.of(1, 2, 3), cfg),
      /rejected the graph/,
    );
  } finally {
    await Promise.all([kv.release(), full.release()]);
  }
});

async function run(script: string, args: string[]) {
  const out = await new Deno.Command(DENO, {
    args: ["run", "-A", script, ...args],
    cwd: ROOT, // scripts and presets are named relative to the repo root
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("CLI: init-model from a preset, export writes the exporter's exact bytes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "onnx_cli_" });
  try {
    const m = `${dir}/model`;
    const init = await run("src/cli/init_model.ts", [
      "--preset",
      "configs/models/tiny-qwen3.json",
      "--out",
      m,
      "--seed",
      "3",
      "--norm-noise",
      "0.2",
    ]);
    assert.equal(init.code, 0, init.stderr);
    const again = await run("src/cli/init_model.ts", [
      "--preset",
      "configs/models/tiny-qwen3.json",
      "--out",
      m,
    ]);
    assert.equal(again.code, 2, "refuses a folder that has files (FolderNotEmptyError: bad input)");
    assert.match(again.stderr, /FolderNotEmptyError.*--force/);
    const onnx = `${dir}/model.onnx`;
    const ex = await run("src/cli/export.ts", ["--model", m, "--onnx", onnx, "--kv-cache"]);
    assert.equal(ex.code, 0, ex.stderr);
    const w = await loadModel(denoFolder(m));
    assert.deepEqual(await Deno.readFile(onnx), exportOnnx(w, { kvCache: true }));
    const leftovers = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) =>
      n.includes(".tmp-")
    );
    assert.deepEqual(leftovers, [], "atomic write leaves no temp files");
    const missing = await run("src/cli/export.ts", ["--model", `${dir}/nope`, "--onnx", onnx]);
    assert.equal(missing.code, 2); // a model folder that is not there: bad input
    assert.match(missing.stderr, /has no config\.json/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("CLI: bad arguments print the usage on stderr and exit 2; --help exits 0", async () => {
  const bad: [string, string[], RegExp][] = [
    ["src/cli/export.ts", [], /--model is required/],
    ["src/cli/export.ts", ["--model", "m"], /--onnx is required/],
    ["src/cli/export.ts", ["--model", "m", "--onnx", "o", "--kv"], /unknown flag --kv/],
    ["src/cli/export.ts", ["--model", "m", "--onnx", "o", "--max-positions", "0"], /at least 1/],
    ["src/cli/init_model.ts", ["--preset", "p", "--out", "o", "--dtype", "F8"], /one of F32/],
  ];
  const results = await Promise.all(bad.map(([s, a]) => run(s, a)));
  results.forEach((r, i) => {
    assert.equal(r.code, 2, `${bad[i][1].join(" ")}: exit ${r.code}`);
    assert.match(r.stderr, bad[i][2]);
    assert.match(r.stderr, /^usage: npx deno task /m);
    assert.equal(r.stdout, "");
  });
  const help = await run("src/cli/export.ts", ["--help"]);
  assert.equal(help.code, 0);
  assert.match(
    help.stdout,
    /^usage: npx deno task export --model DIR --onnx OUT\.onnx \[--kv-cache\]/,
  );
});

// Greedy exact match (`deno task match`): records the model completes word for word count, the
// others are misses carrying what the model wrote; the CLI's contract (--json, usage errors).

import { assert, assertEquals } from "../assert.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { Generator } from "../../src/model/generate.ts";
import { GpuModel } from "../../src/model/gpu_model.ts";
import { initModel } from "../../src/model/init.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import type { SftRecord } from "../../src/train/sft_data.ts";
import { greedyMatch, matchTargets } from "../../src/train/sft_match.ts";

const DENO = Deno.execPath();
const ROOT = new URL("../../", import.meta.url).pathname;
const PROMPTS = ["copy\nabc\n", "find [3]\n[3] Kel\n", "x", "hanabi p0 t1\n", "", "#### "];

Deno.test("greedyMatch counts word-for-word completions, whatever the batch", async () => {
  const json = JSON.parse(await Deno.readTextFile(`${ROOT}configs/models/tiny-llama.json`));
  const w = initModel(parseModelConfig(json), { seed: 5, std: 0.4 });
  const tok = new ByteTokenizer();
  const gpu = await Gpu.create();
  const model = await GpuModel.create(gpu, w, { slots: PROMPTS.length, maxLen: 40 });
  try {
    const gen = await Generator.create(model);
    // What the model writes for each prompt, generated all together.
    const probe = matchTargets(
      tok,
      PROMPTS.map((prompt, i) => ({
        kind: "completion",
        prompt,
        completion: "?",
        source: { file: "p", line: i + 1 },
      })),
    );
    const outs = await gen.generate(
      probe.map((t) => ({
        prompt: t.prompt,
        maxNewTokens: 6,
        stopIds: tok.stopIds,
        sampling: { temperature: 0 },
      })),
    );
    const written = outs.map((r) => tok.decode(r.ids, { skipSpecialTokens: true }));
    // Even records expect exactly that (with stray whitespace around it), odd ones something else.
    const records: SftRecord[] = PROMPTS.map((prompt, i) => ({
      kind: "completion",
      prompt,
      completion: i % 2 === 0 ? ` ${written[i]}\n` : `${written[i]}#`,
      source: { file: "d.jsonl", line: i + 1 },
    }));
    for (const batch of [1, 4, PROMPTS.length]) {
      const r = await greedyMatch(gen, tok, matchTargets(tok, records), { batch, maxNewTokens: 6 });
      assertEquals([r.exact, r.total], [3, PROMPTS.length], `batch ${batch}`);
      assertEquals(r.misses.map((m) => m.source.line), [2, 4, 6]);
      r.misses.forEach((m) => assertEquals(m.got, written[m.source.line - 1]));
    }
    // An empty prompt starts from the bos, as sft trains it.
    assertEquals(matchTargets(tok, records)[4].prompt, [tok.bosId!]);
  } finally {
    model.destroy();
    gpu.destroy();
  }
});

async function run(args: string[]) {
  const out = await new Deno.Command(DENO, {
    args: ["run", "-A", `${ROOT}src/cli/match.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test("deno task match: --json summary line, usage errors exit 2, bad data is named", async () => {
  const dir = await Deno.makeTempDir({ prefix: "match_test_" });
  try {
    const init = await new Deno.Command(DENO, {
      args: [
        "run",
        "-A",
        `${ROOT}src/cli/init_model.ts`,
        "--preset",
        `${ROOT}configs/models/tiny-llama.json`,
        "--out",
        `${dir}/m`,
        "--seed",
        "3",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(init.code, 0, new TextDecoder().decode(init.stderr));
    const lines = ["a", "bb", "ccc"].map((p) =>
      JSON.stringify({ prompt: p, completion: "zzzzzzzz", meta: { agent: "x" } })
    );
    await Deno.writeTextFile(`${dir}/d.jsonl`, lines.join("\n") + "\n");
    const ok = await run([
      "--model",
      `${dir}/m`,
      "--data",
      `${dir}/d.jsonl`,
      "--limit",
      "2",
      "--json",
      "--show",
      "1",
    ]);
    assertEquals(ok.code, 0, ok.stderr);
    const last = JSON.parse(ok.stdout.trim().split("\n").at(-1)!);
    // A fresh random model does not write "zzzzzzzz": both records are misses, the first shown.
    assertEquals(last, { exact: 0, total: 2, rate: 0 });
    assert(/d\.jsonl:1: expected "zzzzzzzz", got /.test(ok.stdout), ok.stdout);
    assert(!/d\.jsonl:2:/.test(ok.stdout), "--show 1 prints one miss");
    assert(/exact 0\/2 \(0\.0%\)/.test(ok.stdout), ok.stdout);
    const usage = await run(["--data", `${dir}/d.jsonl`]);
    assertEquals(usage.code, 2);
    assert(/--model is required/.test(usage.stderr), usage.stderr);
    await Deno.writeTextFile(`${dir}/bad.jsonl`, `{"prompt": "a"}\n`);
    const bad = await run(["--model", `${dir}/m`, "--data", `${dir}/bad.jsonl`]);
    assertEquals(bad.code, 2); // SftDataError: bad input
    assert(/bad\.jsonl:1: needs string "prompt" and "completion"/.test(bad.stderr), bad.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// The browser app's host-neutral parts in Deno: the run store (checkpoints, keep-last-N,
// half-written checkpoints skipped, metrics), metrics export (chart points, JSONL, CSV), the ZIP
// writer and reader, the sampling explorer's cuts, the charts' smoothing, and the rollout viewer's
// board replay, text without special tokens and the group it opens on.

import { assert, assertEquals } from "../assert.ts";
import { contents, preset } from "../train/ckpt_fixtures.ts";
import {
  chartPoint,
  metricsToCsv,
  metricsToJsonl,
  smooth,
} from "../../src/browser/metrics_export.ts";
import {
  memoryStore,
  metricsUpTo,
  newRunId,
  type RunMeta,
  RunStore,
  StoreRunSink,
} from "../../src/browser/run_store.ts";
import { crc32, unzipFiles, zipFiles } from "../../src/browser/zip.ts";
import { samplingView } from "../../src/browser/sampling_view.ts";
import {
  buildEpisodeViews,
  type EpisodeView,
  mostInformative,
} from "../../src/browser/rollout_view.ts";
import { checkpointFiles, readCheckpoint } from "../../src/train/checkpoint.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { ByteTokenizer } from "../../src/model/tokenizer.ts";
import { buildGroups, groupAdvantages } from "../../src/rl/advantages.ts";
import type { Group, Sample } from "../../src/rl/rollout.ts";
import type { StepMetrics } from "../../src/rl/session.ts";

const META = (id: string): RunMeta => ({
  id,
  config: { env: { id: "plan_path_v1" } },
  model: { kind: "builtin", id: "plan_path_tiny" },
  created: "2026-01-01T00:00:00Z",
  status: "running",
  steps: 10,
});

Deno.test("run store: checkpoints round-trip, keep-last-N, best, metrics", async () => {
  const runs = new RunStore(memoryStore());
  const id = newRunId("quick start", new Date("2026-01-02T03:04:05.678Z"));
  assertEquals(id, "quick_start-2026-01-02T03-04-05-678");
  await runs.writeMeta(META(id));
  const sink = new StoreRunSink(runs, id);
  for (const step of [1, 2, 3]) {
    await sink.saveCheckpoint(`step-${step}`, {
      ...(await contents(step)),
      state: { step, rng: 0 },
    }, 2);
  }
  await sink.saveCheckpoint("best", { ...(await contents(2)), state: { step: 2, rng: 0 } }, 2);
  assertEquals((await runs.checkpoints(id)).map((c) => c.name), ["step-2", "step-3", "best"]);
  const [info] = await runs.listRuns();
  assertEquals(info.latest, { name: "step-3", step: 3 });
  const base = await preset("tiny-qwen2");
  const ck = await readCheckpoint(runs.checkpointFolder(id, "step-3"), { base });
  assertEquals(ck.state.step, 3);
  const want = await contents(3);
  assertEquals(
    Array.from(ck.optimizers.planner.moments[1].v.slice(0, 5)),
    Array.from(want.optimizers!.planner.moments[1].v.slice(0, 5)),
  );
  // Download form: every file, the manifest among them.
  const files = await runs.checkpointFileMap(id, "step-3");
  assert(
    files.has("checkpoint.json") && files.has("adapters/planner/adapter_model.safetensors"),
    [...files.keys()].join(),
  );

  await sink.metric({ step: 0, eval: { successRate: 0.25 } });
  await sink.metric({ step: 1, reward: 1 });
  await sink.metric({ step: 2, reward: 2 });
  // A resume from step 1 redoes step 2: its old line is replaced, not duplicated.
  const resumed = new StoreRunSink(runs, id, metricsUpTo(await runs.readMetrics(id), 1));
  await resumed.metric({ step: 2, reward: 5 });
  assertEquals((await runs.readMetrics(id)).map((m) => [m.step, m.reward ?? null]), [[0, null], [
    1,
    1,
  ], [2, 5]]);
});

Deno.test("run store: a checkpoint without its manifest (interrupted write) is not offered", async () => {
  const store = memoryStore();
  const runs = new RunStore(store);
  await runs.writeMeta(META("r1"));
  await runs.saveCheckpoint(
    "r1",
    "step-1",
    await checkpointFiles({ ...(await contents(1)), state: { step: 1, rng: 0 } }),
    3,
  );
  const files = await checkpointFiles({ ...(await contents(2)), state: { step: 2, rng: 0 } });
  for (const [p, b] of files) {
    if (p !== "checkpoint.json") await store.write(`runs/r1/checkpoints/step-2/${p}`, b);
  }
  assertEquals((await runs.checkpoints("r1")).map((c) => c.name), ["step-1"]);
  // A truncated file under a manifest is refused too.
  await store.write("runs/r1/checkpoints/step-1/trainer_state.json", new Uint8Array(3));
  assertEquals((await runs.checkpoints("r1")).map((c) => c.name), []);
  assertEquals((await runs.listRuns())[0].latest, null);
});

const LINES: StepMetrics[] = [
  { step: 0, eval: { successRate: 0.125, episodes: 8, samples: [] } },
  {
    step: 1,
    reward: 1.5,
    trainSuccess: 0.5,
    rewardByAgent: { tool: { "0": 2, "1": 4 }, plan: { "0": -1 } },
    rolloutTokensPerS: 50,
    updates: [{ trainer: "lora", loss: 0.2, approxKl: 0.01, entropy: 1, clipFrac: 0, tokens: 30 }, {
      trainer: "lora",
      loss: 0.4,
      approxKl: 0.03,
      entropy: 2,
      clipFrac: 0.5,
      tokens: 10,
    }],
    seconds: { rollout: 2, update: 1 },
    description: 'a, "quoted"',
  },
];

Deno.test("metrics export: chart points, JSONL and CSV", () => {
  const p0 = chartPoint(LINES[0]), p1 = chartPoint(LINES[1]);
  assertEquals(p0.evalSuccess, 0.125);
  assertEquals(p0.loss, null);
  assertEquals(p1.rewardByAgent, { tool: 3, plan: -1 });
  assert(Math.abs(p1.loss! - 0.25) < 1e-12, `token-weighted loss ${p1.loss}`);
  assert(Math.abs(p1.clipFrac! - 0.125) < 1e-12);
  assertEquals(metricsToJsonl(LINES).trim().split("\n").map((l) => JSON.parse(l).step), [0, 1]);
  const csv = metricsToCsv(LINES).trim().split("\n");
  const cols = csv[0].split(",");
  assertEquals(cols.slice(0, 3), ["step", "eval.successRate", "eval.episodes"]);
  assert(
    cols.includes("rewardByAgent.tool.1") && cols.includes("update.loss") &&
      cols.includes("seconds.rollout"),
    csv[0],
  );
  assert(!cols.includes("updates") && !cols.includes("eval.samples"), "arrays are left out");
  assertEquals(csv.length, 3);
  assert(csv[2].includes('"a, ""quoted"""'), csv[2]);
  assertEquals(csv[1].split(",")[cols.indexOf("eval.successRate")], "0.125");
});

Deno.test("zip: round trip, CRC, deflate entries", async () => {
  assertEquals(crc32(new TextEncoder().encode("123456789")), 0xcbf43926);
  const files = new Map([["a/b.json", new TextEncoder().encode('{"x":1}')], [
    "w.bin",
    new Uint8Array(1000).map((_, i) => i % 251),
  ]]);
  const back = await unzipFiles(zipFiles(files));
  assertEquals([...back.keys()], ["a/b.json", "w.bin"]);
  assertEquals(Array.from(back.get("w.bin")!), Array.from(files.get("w.bin")!));
  // A deflated entry, as zip tools write them: rebuild the archive with method 8.
  const raw = new Uint8Array(
    await new Response(
      new Blob([files.get("w.bin")!]).stream().pipeThrough(new CompressionStream("deflate-raw")),
    ).arrayBuffer(),
  );
  const z = zipFiles(new Map([["w.bin", raw]]));
  const dv = new DataView(z.buffer);
  const cdOff = dv.getUint32(z.length - 22 + 16, true);
  for (const [o, crcAt, usizeAt] of [[0, 14, 22], [cdOff, 16, 24]]) {
    dv.setUint16(o + (o === 0 ? 8 : 10), 8, true);
    dv.setUint32(o + crcAt, crc32(files.get("w.bin")!), true);
    dv.setUint32(o + usizeAt, 1000, true);
  }
  assertEquals(Array.from((await unzipFiles(z)).get("w.bin")!), Array.from(files.get("w.bin")!));
});

Deno.test("sampling view: temperature, top-k, top-p cuts", () => {
  const logits = [2, 1, 0, -1, 3];
  const all = samplingView(logits, { temperature: 1, topK: 0, topP: 1 });
  assertEquals(all.kept, 5);
  assertEquals(all.tokens.map((t) => t.id), [4, 0, 1, 2, 3]);
  assert(Math.abs(all.tokens.reduce((s, t) => s + t.p, 0) - 1) < 1e-12);
  const k2 = samplingView(logits, { temperature: 1, topK: 2, topP: 1 });
  assertEquals(k2.tokens.filter((t) => !t.cut).map((t) => t.id), [4, 0]);
  assertEquals(k2.tokens.find((t) => t.id === 1)!.cut, "top-k");
  assert(Math.abs(k2.tokens[0].pKept + k2.tokens[1].pKept - 1) < 1e-12);
  const p = samplingView(logits, { temperature: 1, topK: 0, topP: 0.5 });
  assertEquals(p.kept, 1);
  assertEquals(p.tokens[1].cut, "top-p");
  const hot = samplingView(logits, { temperature: 5, topK: 0, topP: 1 });
  assert(hot.entropy > all.entropy, "a higher temperature flattens the distribution");
  const greedy = samplingView(logits, { temperature: 0, topK: 0, topP: 1 });
  assertEquals(greedy.kept, 1);
  assertEquals(greedy.tokens[1].cut, "greedy");
});

Deno.test("rollout view: boards replayed along the chosen branch, advantages attached", async () => {
  const env = getEnv("tic_tac_toe_v1");
  const task = { opening: [], shaping: false };
  const mk = (
    agent: string,
    turn: number,
    candidate: number,
    text: string,
    reward: number,
    chosen: boolean,
  ): Sample => ({
    env: 0,
    agent,
    turn,
    candidate,
    promptIds: [257, 65],
    completionIds: [35, 35],
    oldLogp: [-1, -2],
    text,
    reward,
    team: 0,
    local: reward,
    chosen,
  });
  const groups: Group[] = [
    {
      key: "0|player_x|0",
      env: 0,
      agent: "player_x",
      turn: 0,
      samples: [mk("player_x", 0, 0, "#### 5", 0, true), mk("player_x", 0, 1, "nope", -2, false)],
    },
    {
      key: "0|player_o|0",
      env: 0,
      agent: "player_o",
      turn: 0,
      samples: [mk("player_o", 0, 0, "#### 5", -1, false), mk("player_o", 0, 1, "#### 1", 0, true)],
    },
  ];
  const stats = groupAdvantages(buildGroups<Sample>(groups.flatMap((g) => g.samples), "tree"), {
    normalize: "std",
    eps: 1e-6,
  });
  const [ep] = await buildEpisodeViews(env, groups, stats, {
    step: 1,
    tasks: [task],
    tokenizer: new ByteTokenizer(),
  });
  assertEquals(ep.frames.length, 2);
  assertEquals(
    ep.frames[0].board.view.kind === "grid" && ep.frames[0].board.view.cells.flat().join(""),
    ".........",
  );
  assertEquals(
    ep.frames[1].board.view.kind === "grid" && ep.frames[1].board.view.cells.flat().join(""),
    "....x....",
  );
  assertEquals(ep.final.view.kind === "grid" && ep.final.view.cells.flat().join(""), "o...x....");
  const a = ep.frames[0].candidates.map((c) => c.advantage);
  assert(a[0] > 0 && a[1] < 0 && Math.abs(a[0] + a[1]) < 1e-9, `advantages ${a}`);
  assertEquals(ep.frames[0].candidates[0].tokens, ["#", "#"]);
  // Structured-cloneable: it crosses from the worker to the page.
  assertEquals(structuredClone(ep).frames[1].agent, "player_o");
});

Deno.test("smooth: debiased EMA, nulls kept, 0 = off", () => {
  assertEquals(smooth([1, null, 3], 0), [1, null, 3]);
  const s = smooth([2, null, 4, 4], 0.5);
  assertEquals(s[0], 2, "debiased: the first value is itself");
  assertEquals(s[1], null);
  // acc = 0.5·1 + 0.5·4 = 2.5 over (1 − 0.25) = 10/3; then (0.5·2.5 + 2) / (1 − 0.125) = 26/7.
  assert(Math.abs(s[2]! - 10 / 3) < 1e-12 && Math.abs(s[3]! - 26 / 7) < 1e-12, `${s}`);
});

Deno.test("rollout view: shown text without special tokens; no tool output for a game's agents; the widest group first", async () => {
  const env = getEnv("tic_tac_toe_v1");
  const tok = new ByteTokenizer();
  const ids = [...new TextEncoder().encode("#### 5"), tok.eosId];
  const mk = (agent: string, candidate: number, reward: number, chosen: boolean): Sample => ({
    env: 0,
    agent,
    turn: 0,
    candidate,
    promptIds: [257],
    completionIds: ids,
    oldLogp: ids.map(() => -1),
    text: tok.decode(ids),
    reward,
    team: 0,
    local: reward,
    chosen,
  });
  const groups: Group[] = [
    {
      key: "0|player_x|0",
      env: 0,
      agent: "player_x",
      turn: 0,
      samples: [mk("player_x", 0, 0, true), mk("player_x", 1, 0, false)],
    },
    {
      key: "0|player_o|0",
      env: 0,
      agent: "player_o",
      turn: 0,
      samples: [mk("player_o", 0, 1, true), mk("player_o", 1, -1, false)],
    },
  ];
  const stats = groupAdvantages(buildGroups<Sample>(groups.flatMap((g) => g.samples), "tree"), {
    normalize: "std",
    eps: 1e-6,
  });
  const [ep] = await buildEpisodeViews(env, groups, stats, {
    step: 1,
    tasks: [{ opening: [], shaping: false }],
    tokenizer: tok,
  });
  const c = ep.frames[0].candidates[0];
  assertEquals(c.text, "#### 5<eos>");
  assertEquals(c.shown, "#### 5");
  assertEquals(
    c.tokens[c.tokens.length - 1],
    "<eos>",
    "tokens keep the special token: it is trained on",
  );
  assertEquals(ep.frames.map((f) => f.toolOutput), [null, null]);
  // Frame 0 (player_x): equal rewards, no signal; frame 1 (player_o) has the spread.
  assertEquals(mostInformative([ep]), { env: 0, frame: 1 });
  const flat: EpisodeView = {
    ...ep,
    frames: ep.frames.map((f) => ({ ...f, zeroVariance: true, std: 0 })),
  };
  assertEquals(mostInformative([flat]), { env: 0, frame: 0 });
});

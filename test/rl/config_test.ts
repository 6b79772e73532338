// The run config: the paper's defaults, every validation error naming its field and reason, the
// cross-field rules, `--set` overrides and their type errors, and the generated docs.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import {
  applySets,
  ConfigError,
  configWarnings,
  defaultConfig,
  describeConfig,
  describeConfigMarkdown,
  evalTemperature,
  formatConfig,
  lrSchedule,
  MODEL_PRESETS,
  parseConfig,
  policyLossConfig,
  presetPath,
  type RunConfig,
} from "../../src/rl/config.ts";
import { envForConfig } from "../../src/rl/env_for.ts";
import { LORA_MODULES } from "../../src/model/lora_layout.ts";
import { lrAt } from "../../src/train/schedule.ts";

/** parseConfig must throw a ConfigError whose path is `path` and whose message names it and says `why`. */
function rejects(raw: unknown, path: string, why: string, sets: string[] = []): ConfigError {
  const err = assertThrows(() => parseConfig(raw, { sets }), "ConfigError") as ConfigError;
  assertEquals(err.path, path, `path of ${JSON.stringify(raw)}: ${err.message}`);
  assert(err.message.includes(path), `message lacks the field "${path}": ${err.message}`);
  assert(err.message.includes(why), `message lacks "${why}": ${err.message}`);
  return err;
}

const at = (c: unknown, path: string) =>
  path.split(".").reduce((o, k) => (o as Record<string, unknown>)[k], c);

Deno.test("defaults are the paper's released values", () => {
  const c = defaultConfig();
  assertEquals([c.rollout.mode, c.rollout.k, c.rollout.maxTurns], ["tree", 4, 4]);
  assertEquals(c.rollout.sampling, {
    temperature: 1,
    topP: 0.9,
    topK: 20,
    repetitionPenalty: 1,
    stop: [],
  });
  assertEquals([c.rewards.alpha, c.rewards.normalize, c.rewards.filter], [1, "std", "none"]);
  assertEquals(c.update.loss, {
    clipLow: 0.2,
    clipHigh: 0.2,
    dualClip: 3,
    aggregation: "token-mean",
  });
  assertEquals([c.update.klCoef, c.update.ppoEpochs, c.update.miniBatchSize], [0, 1, 64]);
  assertEquals([c.update.optimizer.lr, c.update.optimizer.maxGradNorm], [5e-6, 1]);
  assertEquals(c.update.schedule, { kind: "cosine", warmupSteps: 10, minRatio: 0.3 });
  assertEquals(c.update.lora, { rank: 16, alpha: 32, targets: [...LORA_MODULES] });
  assertEquals([c.eval.everySteps, c.eval.temperature], [10, null]);
  assertEquals([c.level, c.update.mode, c.model.preset, c.model.folder], [
    "L2",
    "lora",
    "tiny-llama",
    null,
  ]);
});

Deno.test("parseConfig({}) resolves env knobs, eval temperature and run name", () => {
  const c = parseConfig({});
  assertEquals(c.env.difficulty, {
    size: 10,
    wallDensity: 0.22,
    maxTurns: 4,
    minDistance: 2,
    toolWidth: 0,
  });
  assertEquals(c.eval.temperature, 0);
  assertEquals(c.run.name, "run");
  assertEquals(parseConfig({}, { source: "configs/foo_L2.json" }).run.name, "foo_L2");
  assertEquals(parseConfig({ env: { difficulty: { size: 5 } } }).env.difficulty.size, 5);
  // The resolved config is itself a valid config that resolves to the same thing (resume reads it back).
  assertEquals(parseConfig(JSON.parse(JSON.stringify(c))), c);
  // Callers get fresh objects: editing one default must not leak into the next.
  (defaultConfig().update.lora.targets as string[]).push("x");
  assertEquals(defaultConfig().update.lora.targets.length, LORA_MODULES.length);
});

Deno.test("validation temperature: greedy for planning, 0.6 for code and math, explicit wins", () => {
  assertEquals(evalTemperature(parseConfig({})), 0);
  assertEquals(parseConfig({ env: { id: "math_v1" } }).eval.temperature, 0.6);
  assertEquals(parseConfig({ env: { id: "code_v1" } }).eval.temperature, 0.6);
  assertEquals(
    parseConfig({ env: { id: "code_v1" }, eval: { temperature: 0 } }).eval.temperature,
    0,
  );
  assertEquals(parseConfig({ eval: { temperature: 0.3 } }).eval.temperature, 0.3);
});

Deno.test("field errors name the field and say why", () => {
  rejects({ rolout: {} }, "rolout", `did you mean "rollout"`);
  rejects({ rollout: { kk: 3 } }, "rollout.kk", `did you mean "k"`);
  rejects({ rollout: 3 }, "rollout", "must be an object");
  rejects({ rollout: { k: "4" } }, "rollout.k", "whole number");
  rejects({ rollout: { k: 2.5 } }, "rollout.k", "whole number");
  rejects({ rollout: { envsPerStep: 0 } }, "rollout.envsPerStep", "≥ 1");
  rejects(
    { rollout: { sampling: { temperature: 0 } } },
    "rollout.sampling.temperature",
    "zero variance",
  );
  rejects({ rollout: { sampling: { topP: 1.5 } } }, "rollout.sampling.topP", "≤ 1");
  rejects({ rollout: { promptStyle: "Chat" } }, "rollout.promptStyle", `did you mean "chat"`);
  rejects({ update: { loss: { clipLow: 1 } } }, "update.loss.clipLow", "< 1");
  rejects({ update: { loss: { dualClip: 1 } } }, "update.loss.dualClip", "> 1");
  rejects(
    { update: { loss: { aggregation: "token_mean" } } },
    "update.loss.aggregation",
    `did you mean "token-mean"`,
  );
  rejects({ update: { lora: { targets: [] } } }, "update.lora.targets", "at least 1");
  rejects({ update: { lora: { targets: ["q", "q"] } } }, "update.lora.targets", "repeat");
  rejects(
    { update: { lora: { targets: ["q_proj"] } } },
    "update.lora.targets",
    `"q_proj" is not one of`,
  );
  rejects({ update: { optimizer: { lr: 0 } } }, "update.optimizer.lr", "> 0");
  rejects({ level: "L4" }, "level", `one of "L0", "L1", "L2", "L3"`);
  rejects({ level: null }, "level", "must not be null");
  rejects({ model: { preset: "tiny-lama" } }, "model.preset", `did you mean "tiny-llama"`);
  rejects(
    { rewards: { filterFraction: 1 } },
    "rewards.filterFraction",
    "leaves nothing to train on",
  );
  rejects({ run: { seed: -1 } }, "run.seed", "≥ 0");
  rejects({ eval: { beforeTraining: "yes" } }, "eval.beforeTraining", "true or false");
  rejects({ description: 5 }, "description", "must be a string");
  rejects(
    { env: { difficulty: { size: [5] } } },
    "env.difficulty",
    "numbers, booleans and strings",
  );
  assertThrows(() => parseConfig([]), "ConfigError", "JSON object");
});

Deno.test("every bad field is reported at once", () => {
  const err = assertThrows(
    () => parseConfig({ rollout: { k: 0, envsPerStep: 0 }, run: { steps: -1 } }),
    "ConfigError",
  ) as ConfigError;
  assertEquals(err.issues.map((i) => i.path), ["rollout.k", "rollout.envsPerStep", "run.steps"]);
  assert(err.message.includes("3 problems"), err.message);
  assertThrows(
    () => parseConfig({ rollout: { k: 0 } }, { source: "x.json" }),
    "ConfigError",
    "x.json: rollout.k",
  );
});

Deno.test("environment id and difficulty knobs are checked against the registry", () => {
  rejects({ env: { id: "plan_path" } }, "env.id", `did you mean "plan_path_v1"`);
  rejects({ env: { id: "chess_v1" } }, "env.id", "registered: tic_tac_toe_v1");
  rejects({ env: { difficulty: { siz: 5 } } }, "env.difficulty.siz", `did you mean "size"`);
  rejects({ env: { difficulty: { size: "5" } } }, "env.difficulty.size", "must be a number");
  // Ranges live in the env: generating a task with the knobs finds them.
  rejects({ env: { difficulty: { size: 300 } } }, "env.difficulty", `knob "size"`);
  rejects({ env: { id: "sudoku4_v1", difficulty: { holes: 99 } } }, "env.difficulty", "holes");
});

Deno.test("impossible combinations say why", () => {
  rejects({ level: "L2", update: { mode: "full" } }, "update.mode", "one LoRA adapter per agent");
  rejects({ level: "L3" }, "update.mode", "one full model per agent");
  rejects({ level: "L0" }, "rollout.mode", "single-agent rollouts");
  rejects({ rollout: { mode: "single-agent" } }, "level", "only level L0");
  rejects({ rollout: { k: 1 } }, "rollout.k", "tree rollouts with k = 1");
  rejects({ rollout: { mode: "independent", k: 1 } }, "rollout.k", "every advantage is 0");
  rejects({ model: { preset: null } }, "model", "set model.preset");
  rejects({ model: { folder: "models/x", preset: "tiny-llama" } }, "model", "only one of");
  rejects({ update: { chunkRows: 100 } }, "update.chunkRows", "refuses a sample longer");
  rejects(
    { rewards: { filter: "drop-lowest-mean", filterFraction: 0 } },
    "rewards.filterFraction",
    "drops nothing",
  );
  rejects(
    { level: "L3", update: { mode: "full" }, warmStart: { path: "a", kind: "peft-adapter" } },
    "warmStart.kind",
    "LoRA",
  );
  rejects(
    { rollout: { mode: "independent" }, rewards: { groupBy: "agent" } },
    "rewards.groupBy",
    "whole trajectories",
  );
  rejects(
    { rewards: { groupBy: "env" } },
    "rewards.groupBy",
    `one of "agent-turn", "agent", "turn"`,
  );
  rejects({ run: { name: "a/b" } }, "run.name", "folder name");
  rejects(
    { level: "L0", rollout: { mode: "single-agent" }, env: { id: "hanabi_v1" } },
    "level",
    "hanabi_v1",
  );
  rejects({ env: { id: "plan_path_solo_v1" } }, "env.id", `name the team's env ("plan_path_v1")`);
  rejects({ env: { soloAgent: "tool" } }, "env.soloAgent", "level L2 plays the whole team");
  rejects(
    { level: "L0", rollout: { mode: "single-agent" }, env: { soloAgent: "tol" } },
    "env.soloAgent",
    `did you mean "tool"`,
  );
  rejects(
    { level: "L0", rollout: { mode: "single-agent" }, env: { id: "math_v1", soloAgent: "tool" } },
    "env.soloAgent",
    "roles with a single-agent variant: reasoner",
  );
  assertEquals(
    envForConfig(
      parseConfig({ level: "L0", rollout: { mode: "single-agent" }, env: { soloAgent: "tool" } }),
    ).id,
    "plan_path_tool_solo_v1",
  );
  assertEquals(
    envForConfig(parseConfig({ level: "L0", rollout: { mode: "single-agent" } })).id,
    "plan_path_solo_v1",
  );
  // The same settings in a legal combination pass.
  parseConfig({ level: "L0", rollout: { mode: "single-agent" } });
  parseConfig({ level: "L3", update: { mode: "full" } });
  parseConfig({ level: "L1", update: { mode: "full" } });
  parseConfig({ rewards: { groupBy: "turn" } });
  parseConfig({ run: { steps: 5 }, update: { schedule: { kind: "constant" } } });
  parseConfig({ run: { steps: 0 } });
  parseConfig({ model: { preset: null, folder: "models/x" } });
  // A folder alone replaces the default preset (also through --set).
  assertEquals(parseConfig({ model: { folder: "models/x" } }).model.preset, null);
  assertEquals(parseConfig({}, { sets: ["model.folder=models/x"] }).model, {
    preset: null,
    folder: "models/x",
    hub: null,
    revision: "main",
    dtype: "F32",
    endpoint: null,
    endpoints: {},
    endpointPrompt: "text",
  });
});

Deno.test("files named in the config are checked when a file system is given", () => {
  const files = new Set(["models/hf/config.json", "runs/a/best"]);
  const pathExists = (p: string) => files.has(p);
  const folder = { model: { preset: null, folder: "models/hf" } };
  parseConfig(folder, { pathExists });
  parseConfig({ warmStart: { path: "runs/a/best" } }, { pathExists });
  const e1 = assertThrows(
    () => parseConfig({ model: { preset: null, folder: "models/none" } }, { pathExists }),
    "ConfigError",
  ) as ConfigError;
  assertEquals(e1.path, "model.folder");
  const e2 = assertThrows(
    () => parseConfig({ warmStart: { path: "runs/b" } }, { pathExists }),
    "ConfigError",
  ) as ConfigError;
  assertEquals(e2.path, "warmStart.path");
});

Deno.test("--set overrides are typed by the schema and applied before validation", () => {
  const c = parseConfig({ rollout: { k: 2 } }, {
    sets: [
      "rollout.k=8",
      "rollout.sampling.topP=0.95",
      "eval.beforeTraining=false",
      "description=a b=c",
      "update.loss.dualClip=null",
      'update.lora.targets=["q","v"]',
      "env.difficulty.size=6",
      "env.difficulty.wallDensity=0.1",
      "warmStart.path=null",
      "rollout.envsPerStep=3",
      "rollout.envsPerStep=5", // later wins
    ],
  });
  assertEquals([c.rollout.k, c.rollout.sampling.topP, c.eval.beforeTraining, c.description], [
    8,
    0.95,
    false,
    "a b=c",
  ]);
  assertEquals([c.update.loss.dualClip, c.update.lora.targets, c.rollout.envsPerStep], [null, [
    "q",
    "v",
  ], 5]);
  assertEquals([c.env.difficulty.size, c.env.difficulty.wallDensity], [6, 0.1]);
  const whole = parseConfig({}, {
    sets: ['env.difficulty={"size":4,"maxTurns":2}', "rollout.maxTurns=2"],
  });
  assertEquals([whole.env.difficulty.size, whole.env.difficulty.maxTurns], [4, 2]);
  // A set that makes the config invalid fails validation like the JSON would.
  rejects({}, "rollout.k", "k ≥ 2", ["rollout.k=1"]);
  rejects({}, "level", "L9", ["level=L9"]);
  // The input object is not modified.
  const raw = { rollout: { k: 2 } };
  applySets(raw, ["rollout.k=6"]);
  assertEquals(raw.rollout.k, 2);
});

Deno.test("--set errors name the path and the expected type", () => {
  const bad = (set: string, path: string, why: string) => {
    const err = assertThrows(
      () => parseConfig({}, { sets: [set] }),
      "ConfigError",
      why,
    ) as ConfigError;
    assertEquals(err.path, path, err.message);
  };
  bad("rollout.k=four", "rollout.k", `"four" is not a number`);
  bad("rollout.k=", "rollout.k", "is not a number");
  bad("eval.beforeTraining=yes", "eval.beforeTraining", "not true or false");
  bad("update.lora.targets=q,v", "update.lora.targets", "JSON array");
  bad("env.difficulty=5", "env.difficulty", "JSON object");
  bad("rollout.kk=1", "rollout.kk", `did you mean "k"`);
  bad("rollout=3", "rollout", "is a section");
  bad("rollout.k.x=1", "rollout.k.x", "rollout.k is a field");
  bad("rollout.k", "--set", "not path=value");
  const err = assertThrows(
    () => applySets({ rollout: 3 }, ["rollout.k=4"]),
    "ConfigError",
  ) as ConfigError;
  assertEquals(err.path, "rollout");
});

Deno.test("describeConfig documents every field with a default that round-trips", () => {
  const rows = describeConfig(), defaults = defaultConfig();
  assert(rows.length >= 50, `${rows.length} fields`);
  assertEquals(new Set(rows.map((r) => r.path)).size, rows.length);
  for (const r of rows) {
    assert(r.doc.length > 10, `${r.path} has no doc`);
    assertEquals(JSON.parse(r.default), at(defaults, r.path), r.path);
  }
  const byPath = Object.fromEntries(rows.map((r) => [r.path, r]));
  assertEquals(byPath["rollout.k"].paper, "4");
  assertEquals(byPath["rollout.k"].type, "int (≥ 1)");
  assertEquals(byPath["update.loss.dualClip"].type, "number (> 1) | null");
  const md = describeConfigMarkdown().split("\n");
  assertEquals(md.length, rows.length + 2);
  // Pipes inside cells are escaped, so every row has exactly the table's 5 columns.
  for (const line of md) assertEquals(line.replaceAll("\\|", "").split("|").length, 7, line);
});

Deno.test("formatConfig lists every field and marks overrides", () => {
  const c = parseConfig({ rollout: { k: 8 } });
  const lines = formatConfig(c).split("\n");
  assertEquals(lines.length, describeConfig().length);
  const k = lines.find((l) => l.startsWith("rollout.k "))!;
  assert(/rollout\.k\s+8\s+\(default 4\)/.test(k), k);
  assert(
    !lines.find((l) => l.startsWith("rollout.mode "))!.includes("default"),
    "unchanged field marked",
  );
});

Deno.test("warnings flag legal but doubtful settings", () => {
  const has = (c: RunConfig, s: string) => configWarnings(c).some((w) => w.includes(s));
  assert(has(parseConfig({}), "paper's rate"), "tiny preset at lr 5e-6");
  assert(
    !has(parseConfig({ update: { optimizer: { lr: 1e-3 } } }), "paper's rate"),
    "lr warning at 1e-3",
  );
  assert(
    has(parseConfig({ rollout: { maxTurns: 2 } }), "episodes end at the smaller (2)"),
    "turn mismatch",
  );
  assert(!has(parseConfig({}), "maxTurns"), "turns match by default");
  assert(
    has(
      parseConfig({ env: { id: "tic_tac_toe_v1" }, level: "L3", update: { mode: "full" } }),
      "symmetric",
    ),
    "L3 self-play",
  );
  assert(
    has(
      parseConfig({ run: { steps: 5 }, update: { schedule: { warmupSteps: 0 } } }),
      "no validation",
    ),
    "eval after the end",
  );
  assert(
    has(parseConfig({ run: { steps: 5 } }), "warmupSteps 10 > run.steps 5"),
    "a run that ends in warmup",
  );
  assert(
    !has(
      parseConfig({ run: { steps: 5 }, update: { schedule: { kind: "constant" } } }),
      "warmupSteps",
    ),
    "constant schedules warm up too, but have no decay to squeeze",
  );
});

Deno.test("trainer settings derived from the config", () => {
  const c = parseConfig({
    run: { steps: 20 },
    update: { schedule: { warmupSteps: 2 }, optimizer: { lr: 1e-3 } },
  });
  // In RL steps: the session evaluates it at the RL step, whatever the updates per step.
  const s = lrSchedule(c);
  assertEquals(s, { kind: "cosine", lr: 1e-3, warmupSteps: 2, totalSteps: 20, minRatio: 0.3 });
  const got = [lrAt(s, 0), lrAt(s, 1), lrAt(s, 2), lrAt(s, 20)], want = [0, 0.5e-3, 1e-3, 0.3e-3];
  got.forEach((g, i) =>
    assert(
      Math.abs(g - want[i]) < 1e-15,
      `lr after ${[0, 1, 2, 20][i]} RL steps: ${g}, expected ${want[i]}`,
    )
  );
  assertEquals(
    lrSchedule(parseConfig({ update: { schedule: { kind: "constant" } } })).kind,
    "constant",
  );
  assertEquals(policyLossConfig(parseConfig({ update: { klCoef: 0.01 } })), {
    clipLow: 0.2,
    clipHigh: 0.2,
    dualClip: 3,
    aggregation: "token-mean",
    klCoef: 0.01,
  });
  assertEquals(presetPath(parseConfig({})), "configs/models/tiny-llama.json");
  assertEquals(presetPath(parseConfig({ model: { preset: null, folder: "m" } })), null);
});

Deno.test("MODEL_PRESETS matches configs/models/", () => {
  const files = [...Deno.readDirSync(new URL("../../configs/models/", import.meta.url))]
    .filter((e) => e.name.endsWith(".json")).map((e) => e.name.replace(/\.json$/, "")).sort();
  assertEquals(files, [...MODEL_PRESETS].sort());
});

Deno.test("reward knobs: a null shaping weight resolves to the env's success-dominant one; envs without knobs refuse them", () => {
  assertEquals(parseConfig({ env: { id: "plan_path_v1" } }).rewards.shaping, 0.1);
  assertEquals(parseConfig({ env: { id: "sokoban_v1" } }).rewards.shaping, 1);
  assertEquals(
    parseConfig({ env: { id: "plan_path_v1" }, rewards: { shaping: 1 } }).rewards.shaping,
    1,
  );
  assertEquals(parseConfig({ env: { id: "tic_tac_toe_v1" }, level: "L1" }).rewards.shaping, null);
  rejects(
    { env: { id: "tic_tac_toe_v1" }, level: "L1", rewards: { success: "binary" } },
    "rewards.success",
    "fixed rewards",
  );
  rejects(
    { env: { id: "hanabi_v1" }, level: "L1", rewards: { shaping: 0.5 } },
    "rewards.shaping",
    "no shaping term",
  );
  assertEquals(parseConfig({}).rewards.toolCredit, "lookahead");
});

Deno.test("logging: TensorBoard on and W&B off by default; W&B names and URL are checked", () => {
  const c = parseConfig({});
  assertEquals(c.logging.tensorboard, true);
  assertEquals(c.logging.wandb.project, null);
  const on = parseConfig({}, {
    sets: [
      "logging.wandb.project=my-proj",
      "logging.wandb.mode=offline",
      "logging.tensorboard=false",
    ],
  });
  assertEquals([on.logging.wandb.project, on.logging.wandb.mode, on.logging.tensorboard], [
    "my-proj",
    "offline",
    false,
  ]);
  rejects(
    { logging: { wandb: { baseUrl: "api.wandb.ai" } } },
    "logging.wandb.baseUrl",
    "not an http(s) URL",
  );
  rejects(
    { logging: { wandb: { project: "a/b" } } },
    "logging.wandb.project",
    "cannot be a W&B project name",
  );
  rejects(
    { logging: { wandb: { entity: "" } } },
    "logging.wandb.entity",
    "cannot be a W&B entity name",
  );
  rejects(
    { logging: { wandb: { mode: "on" } } },
    "logging.wandb.mode",
    `"online", "offline", "disabled"`,
  );
  assertEquals(
    parseConfig({ logging: { wandb: { baseUrl: "http://localhost:8080" } } }).logging.wandb.baseUrl,
    "http://localhost:8080",
  );
});

Deno.test("docs/config.md is the schema's table (describeConfigMarkdown), not a stale copy", async () => {
  const doc = await Deno.readTextFile(new URL("../../docs/config.md", import.meta.url));
  assert(
    doc.includes(describeConfigMarkdown()),
    "docs/config.md is stale: regenerate its table with describeConfigMarkdown() (the command is at its top)",
  );
});

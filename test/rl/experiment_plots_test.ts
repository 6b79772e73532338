// The paper table's plots (src/rl/experiment_plots.ts): the curve data (means over seeds, the
// untrained methods as flat references, rewards by agent) and the SVG Vega renders headlessly
// from them: axis titles, one line per method, one line per (method, agent).

import { assert, assertEquals } from "../assert.ts";
import { METHOD_SPECS, type RunResult } from "../../src/rl/experiment.ts";
import {
  renderSvg,
  rewardCurveRows,
  rewardCurveSpec,
  successCurveRows,
  successCurveSpec,
  taskPlots,
} from "../../src/rl/experiment_plots.ts";

type Extra = Pick<RunResult, "curve" | "rewardCurve">;
const run = (
  method: RunResult["method"],
  seed: number,
  successRate: number,
  extra: Extra = {},
  task = "plan_path",
): RunResult => ({
  task,
  method,
  seed,
  successRate,
  samples: 0,
  steps: 2,
  runDir: null,
  eval: {
    episodes: 4,
    successRate,
    avgTurns: 1,
    rewardByAgent: {},
    temperature: 0,
    split: "test",
    successes: [],
    clippedPrompts: 0,
  },
  ...extra,
});

const results: RunResult[] = [
  run("single", 0, 0.25),
  run("single", 1, 0.75),
  run("mas", 0, 0.5),
  run("single_grpo", 0, 0.5, {
    curve: [{ step: 0, successRate: 0.25 }, { step: 1, successRate: 0.5 }, {
      step: 2,
      successRate: 0.5,
    }],
    rewardCurve: [{ step: 1, byAgent: { agent: 0.2 } }, { step: 2, byAgent: { agent: 0.4 } }],
  }),
  run("single_grpo", 1, 1, {
    curve: [{ step: 0, successRate: 0.75 }, { step: 2, successRate: 1 }],
    rewardCurve: [{ step: 1, byAgent: { agent: 0.6 } }, { step: 2, byAgent: { agent: 0.8 } }],
  }),
  run("mas_l2", 0, 0.75, {
    curve: [{ step: 0, successRate: 0.5 }, { step: 2, successRate: 0.75 }],
    rewardCurve: [{ step: 1, byAgent: { plan: 0.1, tool: 0.3 } }, {
      step: 2,
      byAgent: { plan: 0.5, tool: 0.7 },
    }],
  }),
  run("ablation_swapped", 0, 0.0),
  run(
    "mas_l1",
    0,
    0.9,
    { curve: [{ step: 0, successRate: 0.1 }, { step: 3, successRate: 0.9 }] },
    "sokoban",
  ),
];

const labels = {
  grpo: METHOD_SPECS.single_grpo.label,
  l2: METHOD_SPECS.mas_l2.label,
  single: METHOD_SPECS.single.label,
  mas: METHOD_SPECS.mas.label,
};

Deno.test("successCurveRows: mean ± std over the seeds that validated a step; untrained methods flat", () => {
  const rows = successCurveRows(results, "plan_path");
  const at = (method: string, step: number) =>
    rows.find((r) => r.method === method && r.step === step);
  assertEquals(at(labels.grpo, 0), {
    method: labels.grpo,
    kind: "trained",
    step: 0,
    success: 50,
    lo: 50 - Math.sqrt(1250),
    hi: 50 + Math.sqrt(1250),
    seeds: 2,
  });
  assertEquals(
    [at(labels.grpo, 1)!.success, at(labels.grpo, 1)!.seeds],
    [50, 1],
    "only seed 0 validated at step 1",
  );
  assertEquals(
    [at(labels.grpo, 2)!.success, at(labels.grpo, 2)!.hi],
    [75, 100],
    "the band is clipped at 100%",
  );
  assertEquals(rows.filter((r) => r.method === labels.l2).map((r) => [r.step, r.success]), [
    [0, 50],
    [2, 75],
  ]);
  // Untrained: a flat line from step 0 to the last step of any trained curve of the task.
  assertEquals(
    rows.filter((r) => r.method === labels.single).map((r) => [r.kind, r.step, r.success]),
    [["untrained", 0, 50], ["untrained", 2, 50]],
  );
  assertEquals(rows.filter((r) => r.method === labels.mas).map((r) => r.step), [0, 2]);
  assert(!rows.some((r) => r.method.includes("swapped")), "the ablation has no curve");
  assertEquals(
    successCurveRows(results.filter((r) => r.method === "single"), "plan_path"),
    [],
    "no trained curve: no plot",
  );
  assertEquals(
    Math.max(...successCurveRows(results, "sokoban").map((r) => r.step)),
    3,
    "tasks do not mix",
  );
});

Deno.test("rewardCurveRows: each trained method's agents, mean over seeds per step", () => {
  const rows = rewardCurveRows(results, "plan_path");
  const grpo = rows.filter((r) => r.method === labels.grpo);
  assertEquals(grpo.map((r) => [r.agent, r.step]), [["agent", 1], ["agent", 2]]);
  assert(
    Math.abs(grpo[0].reward - 0.4) < 1e-12 && Math.abs(grpo[1].reward - 0.6) < 1e-12,
    JSON.stringify(grpo),
  );
  assertEquals(rows.filter((r) => r.method === labels.l2).map((r) => [r.agent, r.step, r.reward]), [
    ["plan", 1, 0.1],
    ["plan", 2, 0.5],
    ["tool", 1, 0.3],
    ["tool", 2, 0.7],
  ]);
  assert(
    !rows.some((r) => r.method === labels.single || r.method === labels.mas),
    "untrained methods have no training reward",
  );
});

const lineMarks = (svg: string) =>
  [...svg.matchAll(
    /<path aria-label="([^"]*)" role="graphics-symbol" aria-roledescription="line mark"/g,
  )].map((m) => m[1]);

Deno.test("the success plot renders to SVG: axis titles and one line per method", async () => {
  const svg = await renderSvg(
    successCurveSpec("plan_path", successCurveRows(results, "plan_path")),
  );
  assert(svg.startsWith("<svg") && svg.trimEnd().endsWith("</svg>"), svg.slice(0, 100));
  for (
    const title of ["RL step", "held-out success (%)", "plan_path: held-out success vs RL step"]
  ) assert(svg.includes(title), title);
  const lines = lineMarks(svg);
  assertEquals(lines.length, 4, lines.join("\n"));
  for (const l of [labels.single, labels.grpo, labels.mas, labels.l2]) {
    assertEquals(
      lines.filter((a) => a.includes(`method: ${l};`)).length,
      1,
      `${l}: ${lines.join("\n")}`,
    );
  }
});

Deno.test("the reward plot renders to SVG: a panel per trained method, a line per agent", async () => {
  const svg = await renderSvg(rewardCurveSpec("plan_path", rewardCurveRows(results, "plan_path")));
  for (const title of ["RL step", "training reward", labels.grpo, labels.l2]) {
    assert(svg.includes(title), title);
  }
  const lines = lineMarks(svg);
  assertEquals(lines.length, 3, lines.join("\n"));
  for (const agent of ["agent", "plan", "tool"]) {
    assertEquals(lines.filter((a) => a.includes(`agent: ${agent}`)).length, 1, agent);
  }
});

Deno.test("taskPlots: the files of a task, each where it has data", async () => {
  assertEquals((await taskPlots(results, "plan_path")).map((p) => p.name), [
    "curves_plan_path.svg",
    "rewards_plan_path.svg",
  ]);
  assertEquals(
    (await taskPlots(results, "sokoban")).map((p) => p.name),
    ["curves_sokoban.svg"],
    "no reward curve logged",
  );
  assertEquals(await taskPlots(results, "sudoku4"), []);
});

// Oracle demonstrations for every registered env: one record per agent turn, in prompt/completion
// form (compact) or messages form (chat), each prompt exactly the agent's observation and each
// completion a text the env's parser accepts; the JSONL parses as SFT data; the CLI writes it.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { currentAgent } from "../../src/envs/api.ts";
import { demoJsonl, demonstrations, type DemoRecord } from "../../src/envs/demonstrations.ts";
import { ENVS, getEnv } from "../../src/envs/registry.ts";
import type { AnyEnvDefinition, EnvState } from "../../src/envs/types.ts";
import { parseSftJsonl } from "../../src/train/sft_data.ts";
import { Rng } from "../../src/envs/rng.ts";

const completionOf = (
  r: DemoRecord,
) => ("completion" in r ? r.completion : r.messages[r.messages.length - 1].content);

/** The observations an oracle episode shows, turn by turn, replayed independently of the module. */
function observations(env: AnyEnvDefinition, seed: number, style: "compact" | "chat"): unknown[] {
  let s: EnvState = env.reset(env.generate(seed, { split: "train" }));
  const out: unknown[] = [];
  for (let agent = currentAgent(env, s); agent !== null; agent = currentAgent(env, s)) {
    const p = env.observe(s, agent, style);
    out.push(p.style === "compact" ? { style, text: p.text } : { style, messages: p.messages });
    s = env.step(s, agent, env.oracle(s, agent).action).state;
  }
  return out;
}

for (const env of ENVS) {
  Deno.test(`${env.id}: demonstrations are parseable SFT records the env's parser accepts`, () => {
    for (const style of ["compact", "chat"] as const) {
      const d = demonstrations(env, { episodes: 3, style, seed: 10 });
      // One record per agent turn of the oracle's episodes.
      const turns = [10, 11, 12].map((seed) =>
        env.solve(env.generate(seed, { split: "train" })).transcript
      );
      assertEquals(
        d.records.length,
        turns.reduce((a, t) => a + t.length, 0),
        `${style}: record count`,
      );
      assertEquals(
        d.records.map(completionOf),
        turns.flat().map((t) => t.text),
        `${style}: completions are the oracle's texts`,
      );
      const parsed = parseSftJsonl(demoJsonl(d.records), `${env.id}.jsonl`);
      assertEquals(parsed.length, d.records.length);
      assert(
        parsed.every((r) => r.kind === (style === "compact" ? "completion" : "chat")),
        `${style}: wrong record form`,
      );
      for (const r of d.records) {
        const p = env.parseAction(r.meta.agent, completionOf(r));
        assert(p.ok, `${env.id} ${r.meta.agent}: parser rejects "${completionOf(r)}"`);
      }
      // Prompts are exactly what each agent observed before the oracle moved.
      const seen = observations(env, 10, style);
      const first = d.records.filter((r) => r.meta.seed === 10);
      assertEquals(
        first.map((
          r,
        ) => ("prompt" in r
          ? { style, text: r.prompt }
          : { style, messages: r.messages.slice(0, -1) })
        ),
        seen,
      );
      if (style === "chat") {
        assert(first.every((r) => "messages" in r && r.messages.at(-1)!.role === "assistant"));
      }
    }
  });
}

Deno.test("demonstrations: agent filter, determinism, and named errors", () => {
  const env = getEnv("plan_path_v1");
  const plan = demonstrations(env, { episodes: 4, agents: ["plan"] });
  assertEquals(plan.records.length, 4);
  assert(
    plan.records.every((r) =>
      r.meta.agent === "plan" && "completion" in r && r.completion.startsWith("####")
    ),
  );
  assertEquals(plan.successes, 4);
  assertEquals(
    demoJsonl(demonstrations(env, { episodes: 2, seed: 3 }).records),
    demoJsonl(demonstrations(env, { episodes: 2, seed: 3 }).records),
  );
  const small = demonstrations(env, { episodes: 1, difficulty: { size: 5 }, agents: ["plan"] });
  assertEquals((small.records[0] as { prompt: string }).prompt.split("\n")[1].length, 5);
  assertThrows(
    () => demonstrations(env, { episodes: 1, agents: ["ghost"] }),
    "DemoOptionsError",
    "tool, plan",
  );
  assertThrows(() => demonstrations(env, { episodes: 0 }), "DemoOptionsError", "episodes");
});

Deno.test("deno task demos writes JSONL that parses as SFT data", async () => {
  const out = await Deno.makeTempFile({ suffix: ".jsonl" });
  try {
    const cli = new URL("../../src/cli/demos.ts", import.meta.url).pathname;
    const args = [
      "run",
      "-A",
      cli,
      "--env",
      "tic_tac_toe_v1",
      "--episodes",
      "3",
      "--style",
      "chat",
      "--seed",
      "2",
      "--out",
      out,
    ];
    const res = await new Deno.Command(Deno.execPath(), { args, stdout: "null", stderr: "piped" })
      .output();
    assertEquals(res.code, 0, new TextDecoder().decode(res.stderr));
    const text = await Deno.readTextFile(out);
    assertEquals(
      text,
      demoJsonl(
        demonstrations(getEnv("tic_tac_toe_v1"), { episodes: 3, style: "chat", seed: 2 }).records,
      ),
    );
    assert(parseSftJsonl(text, out).every((r) => r.kind === "chat"));
  } finally {
    await Deno.remove(out);
  }
});

Deno.test("helper-tool demonstrations print what the oracle's program printed (through the sandbox)", async () => {
  const { demonstrations } = await import("../../src/envs/demonstrations.ts");
  const { getEnv } = await import("../../src/envs/registry.ts");
  const { act } = await import("../../src/envs/api.ts");
  const { runJs } = await import("../../src/sandbox/mod.ts");
  const env = getEnv("plan_path_v1");
  const difficulty = { size: 5, maxTurns: 2 };
  const d = demonstrations(env, { episodes: 3, agents: ["tool"], helperTools: true, difficulty });
  for (const r of d.records) {
    if (!("prompt" in r)) throw new Error("compact records expected");
    const state = env.reset(env.generate(r.meta.seed, { split: "train", difficulty }));
    const mine = await act(env, state, "tool", r.completion, { run: (c, o) => runJs(c, o) });
    const oracle = env.step(state, "tool", env.oracle(state, "tool").action);
    if (
      JSON.stringify(env.observe(mine.state, "plan", "compact")) !==
        JSON.stringify(env.observe(oracle.state, "plan", "compact"))
    ) {
      throw new Error(`seed ${r.meta.seed}: the helper program's result differs from the oracle's`);
    }
  }
});

Deno.test("every helper-tool program prints what the oracle's program printed (sandbox, several difficulties)", async () => {
  const { HELPER_TOOL_CODE } = await import("../../src/envs/demonstrations.ts");
  const { act } = await import("../../src/envs/api.ts");
  const { runJs } = await import("../../src/sandbox/mod.ts");
  const cases: Record<string, Record<string, number>[]> = {
    plan_path_v1: [{ size: 5, wallDensity: 0.2, maxTurns: 2 }],
    sokoban_v1: [{ size: 5, innerWalls: 0, minPushes: 1, maxTurns: 2 }, {}],
    sudoku4_v1: [{ holes: 4, maxTurns: 2 }, { holes: 12 }],
  };
  assertEquals(
    Object.keys(cases).sort(),
    Object.keys(HELPER_TOOL_CODE).sort(),
    "a helper program without a test case",
  );
  for (const [id, difficulties] of Object.entries(cases)) {
    const env = getEnv(id);
    for (const difficulty of difficulties) {
      const d = demonstrations(env, {
        episodes: 3,
        agents: ["tool"],
        helperTools: true,
        difficulty,
      });
      assertEquals(d.successes, 3);
      for (const r of d.records) {
        if (!("prompt" in r)) throw new Error("compact records expected");
        assertEquals(r.completion, HELPER_TOOL_CODE[id]);
        const state = env.reset(env.generate(r.meta.seed, { split: "train", difficulty }));
        // What the program prints is under test, not its speed: a loaded machine can take longer
        // than the env's 2 s tool budget, so give it room.
        const mine = await act(env, state, "tool", r.completion, {
          run: (c, o) => runJs(c, { ...o, timeoutMs: 30_000 }),
        });
        const oracle = env.step(state, "tool", env.oracle(state, "tool").action);
        assertEquals(mine.localReward, oracle.localReward, `${id} seed ${r.meta.seed}`);
        assertEquals(
          env.observe(mine.state, "plan", "compact"),
          env.observe(oracle.state, "plan", "compact"),
          `${id} seed ${r.meta.seed}`,
        );
      }
    }
  }
});

Deno.test("copy drills: plan turns copy the random answer the tool printed, for every env that has them", async () => {
  const { COPY_DRILL_ANSWERS } = await import("../../src/envs/demonstrations.ts");
  for (const id of Object.keys(COPY_DRILL_ANSWERS)) {
    const env = getEnv(id);
    const d = demonstrations(env, { episodes: 6, copyDrills: true });
    assert(d.records.length >= 6, `${id}: ${d.records.length} records`);
    const answers = new Set<string>();
    for (const r of d.records) {
      if (!("prompt" in r)) throw new Error("compact records expected");
      assert(!env.toolAgents.includes(r.meta.agent), `${id}: a tool turn was kept`);
      // The tool line of the prompt holds the printed answer (Sokoban pads it with "_").
      const line = /\ntool:([^\n]*)\n$/.exec(r.prompt);
      assert(line !== null, `${id}: no tool line in ${JSON.stringify(r.prompt)}`);
      const shown = line[1].replace(/_+$/, "");
      assertEquals(r.completion, `#### ${shown}`, `${id} seed ${r.meta.seed}`);
      assert(
        env.parseAction(r.meta.agent, r.completion).ok,
        `${id}: parser rejects ${r.completion}`,
      );
      answers.add(shown);
    }
    assert(
      answers.size >= d.records.length - 1,
      `${id}: drills repeat (${answers.size} distinct of ${d.records.length})`,
    );
    // Seeded: the same options give the same drills.
    assertEquals(demonstrations(env, { episodes: 6, copyDrills: true }).records, d.records);
  }
  assertThrows(
    () => demonstrations(getEnv("tic_tac_toe_v1"), { episodes: 1, copyDrills: true }),
    "DemoOptionsError",
    "has no copy drills",
  );
  assertThrows(
    () => demonstrations(getEnv("sokoban_v1"), { episodes: 1, copyDrills: true, agents: ["tool"] }),
    "DemoOptionsError",
    "keep only plan turns",
  );
  assertThrows(
    () =>
      demonstrations(getEnv("sokoban_v1"), { episodes: 1, copyDrills: true, helperTools: true }),
    "DemoOptionsError",
    "not both",
  );
});

Deno.test("tool noise: wrong tool answers of the right form, never a solution and unrecorded; the plan answers with the oracle's own answer", async () => {
  const { NOISY_TOOL_ANSWERS } = await import("../../src/envs/demonstrations.ts");
  for (const id of Object.keys(NOISY_TOOL_ANSWERS)) {
    const env = getEnv(id);
    const d = demonstrations(env, { episodes: 40, helperTools: true, toolNoise: 0.5 });
    assert(d.noisyTools >= 8 && d.noisyTools <= 32, `${id}: ${d.noisyTools} noisy tools of 40`);
    const toolTurns = d.records.filter((r) => env.toolAgents.includes(r.meta.agent)).length;
    assertEquals(
      toolTurns,
      40 - d.noisyTools,
      `${id}: only the reliable tools' turns are recorded`,
    );
    let copies = 0, alone = 0;
    for (const r of d.records) {
      if (!("prompt" in r) || env.toolAgents.includes(r.meta.agent)) continue;
      assertEquals(r.meta.turn, 0, `${id}: the oracle's answer solves at once`);
      assert(r.meta.success, `${id} seed ${r.meta.seed}: the oracle's answer solves the task`);
      const shown = /\ntool:([^\n]*)\n$/.exec(r.prompt)![1].replace(/_+$/, "");
      // The replayed episode: the answer shown to the plan agent solves the task exactly when it
      // came from the reliable tool, and then the plan copies it; otherwise it answers alone.
      const s = env.reset(env.generate(r.meta.seed, { split: "train" }));
      const afterTool = env.step(s, "tool", env.oracle(s, "tool").action).state;
      const copied = env.parseAction(r.meta.agent, `#### ${shown}`);
      const copySolves = copied.ok &&
        env.success(env.step(afterTool, r.meta.agent, copied.action).state);
      const oracle = env.oracle(afterTool, r.meta.agent).text;
      if (copySolves) {
        copies++;
        assertEquals(
          r.completion,
          `#### ${shown}`,
          `${id} seed ${r.meta.seed}: the plan copies a right answer`,
        );
      } else {
        alone++;
        assertEquals(
          r.completion,
          oracle,
          `${id} seed ${r.meta.seed}: after a wrong answer the plan answers alone`,
        );
        assert(
          r.completion !== `#### ${shown}`,
          `${id} seed ${r.meta.seed}: the plan copied a wrong answer`,
        );
      }
    }
    assertEquals([copies, alone], [40 - d.noisyTools, d.noisyTools], id);
    assertEquals(
      demonstrations(env, { episodes: 40, helperTools: true, toolNoise: 0.5 }).records,
      d.records,
      `${id}: seeded`,
    );
  }
  assertThrows(
    () => demonstrations(getEnv("tic_tac_toe_v1"), { episodes: 1, toolNoise: 0.5 }),
    "DemoOptionsError",
    "no noisy tool answers",
  );
  assertThrows(
    () => demonstrations(getEnv("plan_path_v1"), { episodes: 1, toolNoise: 1 }),
    "DemoOptionsError",
    "[0, 1)",
  );
  assertThrows(
    () => demonstrations(getEnv("plan_path_v1"), { episodes: 1, toolNoise: 0.5, copyDrills: true }),
    "DemoOptionsError",
    "not both",
  );
});

Deno.test("sokoban: the plan's compact prompt pads the tool's moves to a fixed width, the full prompt does not", async () => {
  const { TOOL_COMPACT_WIDTH } = await import("../../src/envs/sokoban/env.ts");
  const env = getEnv("sokoban_v1");
  const s0 = env.reset(
    env.generate(3, {
      split: "train",
      difficulty: { size: 5, innerWalls: 0, minPushes: 1, maxTurns: 2 },
    }),
  );
  const s1 = env.step(s0, "tool", env.oracle(s0, "tool").action).state;
  const compact = env.observe(s1, "plan", "compact");
  const chat = env.observe(s1, "plan", "chat");
  if (compact.style !== "compact" || chat.style !== "chat") throw new Error("styles");
  const line = /\ntool:([^\n]*)\n$/.exec(compact.text)![1];
  assertEquals(line.length, TOOL_COMPACT_WIDTH);
  const moves = line.replace(/_+$/, "");
  assert(/^[UDLR]( [UDLR])*$/.test(moves), line);
  assert(
    chat.messages.some((m) => m.content.includes(`Tool output: ${moves}\n`)),
    "the chat prompt shows the moves unpadded",
  );
});

Deno.test("explore: random moves replace a fraction of the oracle's, unrecorded, so the data shows states after mistakes", () => {
  const env = getEnv("hanabi_v1");
  const difficulty = { colors: 2, ranks: 2, handSize: 2 };
  const plain = demonstrations(env, { episodes: 40, difficulty });
  assertEquals(plain.explored, 0);
  assertEquals(
    demoJsonl(demonstrations(env, { episodes: 40, difficulty, explore: 0 }).records),
    demoJsonl(plain.records),
  );
  const d = demonstrations(env, { episodes: 40, difficulty, explore: 0.3 });
  assertEquals(
    demoJsonl(demonstrations(env, { episodes: 40, difficulty, explore: 0.3 }).records),
    demoJsonl(d.records),
    "seeded",
  );
  const turns = d.records.length + d.explored;
  assert(
    d.explored > 0.2 * turns && d.explored < 0.4 * turns,
    `explored ${d.explored} of ${turns} turns`,
  );
  // Every recorded completion is still the oracle's (well-formed, parseable); only states differ.
  for (const r of d.records) {
    const text = completionOf(r);
    assert(
      /^#### (play|discard|hint) \w+$/.test(text) && env.parseAction(r.meta.agent, text).ok,
      text,
    );
  }
  // States no oracle game reaches: wasted turns (malformed or illegal moves) and lost lives.
  const prompts = (x: typeof d) => x.records.map((r) => (r as { prompt: string }).prompt);
  assertEquals(prompts(plain).filter((p) => p.includes("wasted the turn")).length, 0);
  assert(prompts(d).some((p) => p.includes("wasted the turn")), "no prompt after a wasted turn");
  assert(prompts(d).some((p) => /lives[0-2]/.test(p)), "no prompt after a lost life");
  // Envs without randomMove explore with cut-short oracle messages (tic-tac-toe's "#### 5" cut
  // short never parses). Replayed independently: each record is the oracle's move at the state
  // reached by the oracle's moves and one invalid move per explored turn, none of which is kept.
  const t3 = getEnv("tic_tac_toe_v1");
  const ttt = demonstrations(t3, { episodes: 30, explore: 0.2 });
  let i = 0, invalidTurns = 0;
  for (let seed = 0; seed < 30; seed++) {
    let s: EnvState = t3.reset(t3.generate(seed, { split: "train" }));
    for (let agent = currentAgent(t3, s); agent !== null; agent = currentAgent(t3, s)) {
      const r = ttt.records[i] as {
        prompt: string;
        completion: string;
        meta: { seed: number; agent: string };
      } | undefined;
      const prompt = (t3.observe(s, agent, "compact") as { text: string }).text;
      if (r && r.meta.seed === seed && r.meta.agent === agent && r.prompt === prompt) {
        assertEquals(r.completion, t3.oracle(s, agent).text);
        s = t3.step(s, agent, t3.oracle(s, agent).action).state;
        i++;
      } else {
        const bad = t3.parseAction(agent, "");
        assert(!bad.ok);
        s = t3.step(s, agent, bad.invalid).state;
        invalidTurns++;
      }
    }
  }
  assertEquals(i, ttt.records.length, "every record replayed");
  assertEquals(invalidTurns, ttt.explored);
  assert(ttt.explored > 0);
  for (const bad of [1, -0.1, Number.NaN]) {
    assertThrows(
      () => demonstrations(env, { episodes: 1, explore: bad }),
      "DemoOptionsError",
      "[0, 1)",
    );
  }
  assertThrows(
    () => demonstrations(getEnv("sokoban_v1"), { episodes: 1, copyDrills: true, explore: 0.1 }),
    "DemoOptionsError",
    "not both",
  );
});

Deno.test("hanabi randomMove: every kind of action, texts that parse to the move itself", () => {
  const env = getEnv("hanabi_v1");
  const s = env.reset(
    env.generate(0, { split: "train", difficulty: { colors: 3, ranks: 3, handSize: 3 } }),
  );
  const rng = new Rng(7);
  const seen = new Set<string>();
  for (let i = 0; i < 400; i++) {
    const m = env.randomMove!(s, "player_0", rng);
    const p = env.parseAction("player_0", m.text);
    assert(p.ok, m.text);
    assertEquals(p.action, m.action);
    seen.add(m.text);
  }
  // 3 plays, 3 discards, 3 colour hints, 3 rank hints.
  assertEquals(
    [...seen].sort(),
    [
      "play 1",
      "play 2",
      "play 3",
      "discard 1",
      "discard 2",
      "discard 3",
      "hint red",
      "hint green",
      "hint blue",
      "hint 1",
      "hint 2",
      "hint 3",
    ].map((t) => `#### ${t}`).sort(),
  );
});

Deno.test("search copy drills: copies of random letters or names, or the name a [id] points to; seeded, mixed, named errors", () => {
  const env = getEnv("search_v1");
  const d = demonstrations(env, { episodes: 600, copyDrills: true, seed: 5 });
  assertEquals(d.records.length, 600);
  assertEquals(
    demoJsonl(demonstrations(env, { episodes: 600, copyDrills: true, seed: 5 }).records),
    demoJsonl(d.records),
    "seeded",
  );
  const kinds = new Map<string, number>();
  const texts = new Set<string>();
  for (const r of d.records) {
    const { prompt, completion, meta } = r as {
      prompt: string;
      completion: string;
      meta: { drill: string; agent: string };
    };
    assertEquals(meta.agent, "drill");
    kinds.set(meta.drill, (kinds.get(meta.drill) ?? 0) + 1);
    assert(completion.startsWith("#### "), completion);
    const answer = completion.slice(5);
    texts.add(answer);
    const lines = prompt.split("\n");
    if (meta.drill === "find") {
      const id = /^find (\[\d+\])$/.exec(lines[0])![1];
      const hits = lines.filter((l) => l.startsWith(`${id} `));
      assertEquals(hits, [`${id} ${answer}`], prompt);
    } else {
      assertEquals(lines, ["copy", answer, ""]);
    }
    // Names are built like the corpus's (syllables, endings); letters are letters and spaces.
    if (meta.drill === "letters") assert(/^[A-Z][a-z ]*[a-z]$/.test(answer), answer);
    else {assert(
        /^[A-Z][a-z]+( (Labs|Works|Guild|Foundry|River|Province|[A-Z][a-z]+))?(, |$)/.test(answer),
        answer,
      );}
    // Both agents' messages in search_v1 have this form: the parser takes a drill's completion.
    assert(env.parseAction("reasoner", completion).ok);
  }
  assertEquals(texts.size, 600, "every drill copies a different text");
  for (const [kind, share] of [["letters", 0.6], ["names", 0.2], ["find", 0.2]] as const) {
    const got = (kinds.get(kind) ?? 0) / 600;
    assert(Math.abs(got - share) < 0.07, `${kind}: ${got}`);
  }
  // Restricted kinds: only those, in the mix's proportions among them.
  const named = demonstrations(env, {
    episodes: 300,
    copyDrills: true,
    seed: 5,
    drillKinds: ["names", "find"],
  });
  const namedKinds = named.records.map((r) => (r.meta as { drill?: string }).drill);
  assert(namedKinds.every((k) => k === "names" || k === "find"));
  assert(Math.abs(namedKinds.filter((k) => k === "names").length / 300 - 0.5) < 0.1);
  assertThrows(
    () => demonstrations(env, { episodes: 1, copyDrills: true, drillKinds: [] }),
    "DemoOptionsError",
    "drill kinds",
  );
  assertThrows(
    () => demonstrations(env, { episodes: 1, copyDrills: true, drillKinds: ["words" as "names"] }),
    "DemoOptionsError",
    "drill kinds",
  );
  assertThrows(
    () =>
      demonstrations(getEnv("sokoban_v1"), {
        episodes: 1,
        copyDrills: true,
        drillKinds: ["names"],
      }),
    "DemoOptionsError",
    "search_v1",
  );
  assertThrows(
    () => demonstrations(env, { episodes: 1, copyDrills: true, agents: ["search"] }),
    "DemoOptionsError",
    "drop agents",
  );
  assertThrows(
    () => demonstrations(env, { episodes: 1, copyDrills: true, explore: 0.1 }),
    "DemoOptionsError",
    "not oracle play",
  );
  assertThrows(
    () => demonstrations(env, { episodes: 1, copyDrills: true, style: "chat" }),
    "DemoOptionsError",
    "compact",
  );
});

Deno.test("math randomMove: a wrong answer of the right form; explored demonstrations reach turn 2", () => {
  const env = getEnv("math_v1");
  const difficulty = { level: 1, maxNumber: 20, maxTurns: 2 };
  const rng = new Rng(11);
  for (let seed = 0; seed < 40; seed++) {
    const s = env.reset(env.generate(seed, { split: "train", difficulty }));
    for (const agent of ["tool", "reasoner"]) {
      const m = env.randomMove!(s, agent, rng);
      const p = env.parseAction(agent, m.text);
      assert(p.ok, m.text);
      // The reasoner's boxed answer, or the tool's printed one, is never the task's.
      const said = agent === "tool"
        ? (m.action as { execution: { stdout: string } }).execution.stdout.trim()
        : (p.action as { canonical: string }).canonical;
      assert(said !== "" && said !== s.task.answer, `${agent} said ${said}: the answer`);
    }
  }
  // With the reasoner's turn explored, the oracle's turn-2 records quote its wrong answer.
  const d = demonstrations(env, { episodes: 60, explore: 0.5, difficulty });
  const turn2 = d.records.filter((r) => r.meta.turn === 1);
  assert(d.explored > 0 && turn2.length > 0, "no turn-2 records");
  assert(
    turn2.some((r) => /\nyou:\d+ tool:\d+\n/.test((r as { prompt: string }).prompt)) &&
      turn2.some((r) => /\nyou:\d+ rs:\d+\n/.test((r as { prompt: string }).prompt)),
    "turn-2 prompts quote no numeric answers",
  );
});

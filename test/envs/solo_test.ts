// Single-agent (level L0) variants: soloEnvFor's mapping and its named error; per variant, the
// same tasks and splits as the multi-agent env, one agent named as the MAS role, format penalties,
// prompts without the partner's section, the one-agent turn clock, and each env's own end rule
// (math: first answer; code: all reference tests pass, hidden results never shown; tic-tac-toe:
// the scripted opponent, and the measured win rates behind "success = a win"); demonstrations
// (module and `deno task demos`) for a solo env. Conformance and oracle rollouts over the solo
// envs run in conformance_test.ts and oracle_test.ts (they iterate the registry).

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { act, currentAgent, FORMAT_PENALTY, splitOfTask } from "../../src/envs/api.ts";
import { codeSolo, type CodeSoloState } from "../../src/envs/code/solo.ts";
import { demoJsonl, demonstrations } from "../../src/envs/demonstrations.ts";
import { mathSolo, type MathSoloState } from "../../src/envs/math/solo.ts";
import type { SearchTask } from "../../src/envs/search/corpus.ts";
import type { SearchState } from "../../src/envs/search/env.ts";
import { searchSolo, soloTurns } from "../../src/envs/search/solo.ts";
import { envIds, ENVS, getEnv, soloAgentsOf, soloEnvFor } from "../../src/envs/registry.ts";
import { Rng } from "../../src/envs/rng.ts";
import {
  bestVsRandom,
  hashedSide,
  opponentMove,
  ticTacToeSolo,
  type TttSoloState,
} from "../../src/envs/tic_tac_toe/solo.ts";
import { boardOf, legalMoves } from "../../src/envs/tic_tac_toe/rules.ts";
import { promptText } from "../../src/envs/prompt.ts";
import type { AnyEnvDefinition, EnvState, Invalid, Prompt } from "../../src/envs/types.ts";
import { parseSftJsonl } from "../../src/train/sft_data.ts";
import { trustedExecutor } from "./trusted_executor.ts";

/**
 * Solo id → [MAS id, the one agent, the partner's section in the MAS role's prompt]. The solo
 * prompts may say "no tools" / "no tester"; they must not show the partner's work.
 */
const SOLO: Record<string, [string, string, RegExp | null]> = {
  plan_path_solo_v1: ["plan_path_v1", "plan", /tool agent|tool output|tool:/i],
  sokoban_solo_v1: ["sokoban_v1", "plan", /tool agent|tool output|tool:/i],
  sudoku4_solo_v1: ["sudoku4_v1", "plan", /tool agent|tool output|tool:/i],
  math_solo_v1: ["math_v1", "reasoner", /tool agent|tool:|program|javascript/i],
  code_solo_v1: ["code_v1", "coder", /the tester|tester's|tests:|assert/i],
  tic_tac_toe_solo_v1: ["tic_tac_toe_v1", "player", null],
  // One agent doing both roles with the team's search engine: no partner to leave out.
  search_solo_v1: ["search_v1", "agent", null],
};
const TOOL_PLAN = ["plan_path_solo_v1", "sokoban_solo_v1", "sudoku4_solo_v1"];
/** The tool agent alone (env.soloAgent "tool"): tool solo id → its MAS id. */
const TOOL_SOLO: Record<string, string> = {
  plan_path_tool_solo_v1: "plan_path_v1",
  sokoban_tool_solo_v1: "sokoban_v1",
  sudoku4_tool_solo_v1: "sudoku4_v1",
};

const compact = (p: Prompt) => (p.style === "compact" ? p.text : "");

Deno.test("soloEnvFor: each MAS env maps to its variant, a variant to itself", () => {
  assertEquals(
    ENVS.filter((e) => e.soloOf !== undefined).map((e) => e.id).sort(),
    [...Object.keys(SOLO), ...Object.keys(TOOL_SOLO)].sort(),
    "the registered single-agent variants",
  );
  for (const [solo, [mas, agent]] of Object.entries(SOLO)) {
    assertEquals(soloEnvFor(mas).id, solo);
    assertEquals(soloEnvFor(solo).id, solo);
    assertEquals(getEnv(solo).soloOf, mas);
    assertEquals(getEnv(solo).possibleAgents, [agent]);
    // The role's name carries over (a policy or adapter trained for it can be reused); self-play
    // tic-tac-toe has no single role to reuse (player_x / player_o), and Search's single agent
    // does both roles (search and answer).
    if (solo !== "tic_tac_toe_solo_v1" && solo !== "search_solo_v1") {
      assert(getEnv(mas).possibleAgents.includes(agent), `${solo}: "${agent}" is a role of ${mas}`);
    }
    assert(envIds().includes(solo));
  }
});

Deno.test("soloEnvFor by role: the tool agent alone where the tool → plan games have it", () => {
  for (const [toolSolo, mas] of Object.entries(TOOL_SOLO)) {
    const plain = soloEnvFor(mas).id;
    assertEquals(soloEnvFor(mas, "tool").id, toolSolo);
    assertEquals(soloEnvFor(mas, "plan").id, plain, "the plan agent's variant stays the default");
    // From either variant's id, by role.
    assertEquals(soloEnvFor(toolSolo).id, toolSolo);
    assertEquals(soloEnvFor(toolSolo, "plan").id, plain);
    assertEquals(soloEnvFor(plain, "tool").id, toolSolo);
    assertEquals(soloAgentsOf(mas), ["plan", "tool"]);
    assertEquals(getEnv(toolSolo).soloOf, mas);
    assertEquals(getEnv(toolSolo).possibleAgents, ["tool"]);
    assertEquals(getEnv(toolSolo).toolAgents, ["tool"]);
  }
  assertThrows(() => soloEnvFor("plan_path_v1", "critic"), "NoSoloVariantError", "plan, tool");
  assertThrows(() => soloEnvFor("math_v1", "tool"), "NoSoloVariantError", "reasoner");
  assertEquals(soloAgentsOf("math_v1"), ["reasoner"]);
  assertEquals(soloAgentsOf("hanabi_v1"), []);
});

Deno.test("soloEnvFor: hanabi has none and says why; unknown ids are unknown", () => {
  const h = assertThrows(() => soloEnvFor("hanabi_v1"), "NoSoloVariantError", "hidden information");
  for (const mas of ["plan_path_v1", "math_v1", "code_v1", "tic_tac_toe_v1"]) {
    assert(h.message.includes(mas), `the message lists ${mas}: ${h.message}`);
  }
  assert(h.message.includes('"hanabi_v1"'), h.message);
  assertThrows(() => soloEnvFor("plan_path"), "UnknownEnvError");
  assertThrows(() => soloEnvFor("chess_v1"), "UnknownEnvError");
});

for (const [id, [masId, agent, partner]] of Object.entries(SOLO)) {
  const env = getEnv(id), mas = getEnv(masId);

  Deno.test(`${id}: the same tasks and splits as ${masId}`, () => {
    assertEquals(env.defaultDifficulty, mas.defaultDifficulty);
    assertEquals(env.testFraction, mas.testFraction);
    for (const split of ["train", "test"] as const) {
      for (let seed = 0; seed < 60; seed++) {
        const t = env.generate(seed, { split });
        assertEquals(t, mas.generate(seed, { split }), `${split} seed ${seed}`);
        assertEquals(env.taskKey(t), mas.taskKey(t));
        assertEquals(splitOfTask(env, t), split);
        assertEquals(splitOfTask(mas, t), split);
      }
    }
  });

  Deno.test(`${id}: one agent "${agent}"; empty and garbage messages cost the format penalty`, () => {
    assertEquals(env.turnOrder, [agent]);
    assertEquals(env.symmetric, false);
    const s = env.reset(env.generate(4, { split: "train" }));
    assertEquals(currentAgent(env, s), agent);
    const garbage = id === "code_solo_v1" ? "```javascript\nunclosed" : "hello there";
    for (
      const [text, code] of [["", "empty"], [
        garbage,
        id === "code_solo_v1" ? "malformed" : "no_answer",
      ]]
    ) {
      const parsed = env.parseAction(agent, text);
      assert(!parsed.ok, `${id}: "${text}" parsed`);
      assertEquals(parsed.invalid.code, code);
      const r = env.step(s, agent, parsed.invalid);
      assertEquals(r.localReward, FORMAT_PENALTY, `${id}: "${text}"`);
      assertEquals((r.info.invalid as Invalid).code, code);
    }
  });

  Deno.test(`${id}: prompts have no partner section`, () => {
    const s = env.reset(env.generate(5, { split: "train" }));
    const short = masId.replace(/_v\d+$/, "");
    for (const style of ["compact", "chat"] as const) {
      if (partner === null) continue; // self-play has no partner section
      const text = promptText(env.observe(s, agent, style));
      assert(!partner.test(text), `${id} ${style} prompt shows the partner:\n${text}`);
      // The MAS prompt of the same role does show it: the check can fail. (A later turn of the
      // MAS role for the compact forms that only show the partner from turn 2.)
      const masText = promptText(mas.observe(mas.reset(s.task), agent, style)) +
        promptText(mas.observe({ ...mas.reset(s.task), turn: 1 }, agent, style));
      assert(partner.test(masText), `${masId} ${style}: the pattern should match:\n${masText}`);
    }
    const head = id === "tic_tac_toe_solo_v1" ? "ttt solo " : `${short} solo t1\n`;
    assert(compact(env.observe(s, agent, "compact")).startsWith(head));
    const chat = env.observe(s, agent, "chat");
    assert(chat.style === "chat" && /alone|fixed opponent/.test(chat.messages[0].content));
  });
}

for (const id of TOOL_PLAN) {
  const env = getEnv(id), mas = getEnv(SOLO[id][0]);

  Deno.test(`${id}: compact prompt is the MAS plan prompt minus the tool line`, () => {
    for (let seed = 0; seed < 10; seed++) {
      const task = env.generate(seed, { split: "train" });
      const short = mas.id.replace(/_v\d+$/, "");
      const masText = compact(mas.observe(mas.reset(task), "plan", "compact"));
      assert(masText.endsWith("\ntool:none yet\n"), masText);
      const expected = masText.replace(`${short} plan t1\n`, `${short} solo t1\n`)
        .replace(/tool:none yet\n$/, "");
      assertEquals(compact(env.observe(env.reset(task), "plan", "compact")), expected);
    }
  });

  Deno.test(`${id}: the turn clock counts one agent per turn; out of turns costs the fail penalty`, () => {
    const task = env.generate(6, { split: "train", difficulty: { maxTurns: 3 } });
    let s: EnvState = env.reset(task);
    const empty = env.parseAction("plan", "");
    assert(!empty.ok);
    const teams: number[] = [];
    for (let i = 0; i < 3; i++) {
      assertEquals([s.turn, s.cursor, s.truncated], [i, 0, false]);
      const r = env.step(s, "plan", empty.invalid);
      teams.push(r.teamReward);
      if (i < 2) assertEquals(r.info.finalRewards, undefined);
      else assertEquals(r.info.finalRewards, { plan: 0 }, "finalRewards name the plan agent only");
      s = r.state;
    }
    assertEquals([s.turn, s.truncated, currentAgent(env, s)], [3, true, null]);
    // The MAS env's fail penalty, at the last step only (plan_path −1, sokoban −5, sudoku 0).
    const fail = { plan_path_solo_v1: -1, sokoban_solo_v1: -5, sudoku4_solo_v1: 0 }[id]!;
    assertEquals(teams, [0, 0, fail]);
    // The oracle solves in one step with the MAS plan agent's team reward.
    const solo = env.solve(task), both = mas.solve(task);
    assertEquals(solo.transcript.length, 1);
    assert(solo.success && both.success);
    const masPlan = both.transcript.filter((t) => t.agent === "plan");
    assertEquals(
      solo.transcript.map((t) => [t.text, t.teamReward]),
      masPlan.map((t) => [t.text, t.teamReward]),
    );
  });
}

for (const [id, masId] of Object.entries(TOOL_SOLO)) {
  const env = getEnv(id), mas = getEnv(masId);

  Deno.test(`${id}: the same tasks as ${masId}, and the team's tool prompt unchanged`, () => {
    assertEquals(env.defaultDifficulty, mas.defaultDifficulty);
    assertEquals(env.testFraction, mas.testFraction);
    for (const split of ["train", "test"] as const) {
      for (let seed = 0; seed < 20; seed++) {
        const task = env.generate(seed, { split });
        assertEquals(task, mas.generate(seed, { split }));
        for (const style of ["compact", "chat"] as const) {
          assertEquals(
            env.observe(env.reset(task), "tool", style),
            mas.observe(mas.reset(task), "tool", style),
            `${split} ${seed} ${style}`,
          );
        }
      }
    }
  });

  Deno.test(`${id}: its printed answer is committed with the MAS plan agent's reward`, async () => {
    for (let seed = 0; seed < 8; seed++) {
      const task = env.generate(seed, { split: "train" });
      // The oracle's program, really run: one step, solved, the reward the MAS plan gets.
      const code = "```javascript\n" + (env.oracle(env.reset(task), "tool").action as {
        code: string;
      }).code + "```";
      const r = await act(env, env.reset(task), "tool", code, trustedExecutor);
      const both = mas.solve(task);
      const masPlan = both.transcript.find((t) => t.agent === "plan")!;
      assert(r.terminated && env.success(r.state), `${id} seed ${seed}: the oracle program solves`);
      assertEquals([r.teamReward, r.localReward], [masPlan.teamReward, 0]);
      assertEquals(r.info.finalRewards, { tool: 1 });
      assertEquals(env.solve(task).transcript.length, 1);
    }
  });

  Deno.test(`${id}: a program that prints no answer costs the format penalty and a turn`, async () => {
    const task = env.generate(3, { split: "train", difficulty: { maxTurns: 2 } });
    let s: EnvState = env.reset(task);
    const bad = "```javascript\nconsole.log('no idea');\n```";
    const crash = "```javascript\nthrow new Error('boom');\n```";
    const teams: number[] = [];
    for (const [i, text] of [bad, crash].entries()) {
      assertEquals([s.turn, s.cursor], [i, 0]);
      const r = await act(env, s, "tool", text, trustedExecutor);
      assertEquals(r.localReward, FORMAT_PENALTY, text);
      assertEquals((r.info.invalid as Invalid).code, "exec_error");
      teams.push(r.teamReward);
      s = r.state;
    }
    assertEquals([s.truncated, currentAgent(env, s)], [true, null]);
    const fail = { plan_path_tool_solo_v1: -1, sokoban_tool_solo_v1: -5, sudoku4_tool_solo_v1: 0 }[
      id
    ]!;
    assertEquals(teams, [0, fail], "the MAS env's fail penalty at the last turn");
    // An empty message never runs.
    const none = env.parseAction("tool", "");
    assert(!none.ok);
    assertEquals(none.invalid.code, "empty");
    assertEquals(env.step(env.reset(task), "tool", none.invalid).localReward, FORMAT_PENALTY);
  });
}

Deno.test("search_solo_v1: queries and answers in one agent's messages, twice the team's turns, the team's rewards", () => {
  const mas = getEnv("search_v1");
  for (let seed = 0; seed < 20; seed++) {
    const task = searchSolo.generate(seed, { split: "train" }) as SearchTask;
    // The oracle searches the same chain as the team's search agent, then answers once.
    const solo = searchSolo.solve(task), team = mas.solve(task);
    assert(solo.success && team.success, `seed ${seed}`);
    const teamQueries = team.transcript.filter((t) => t.agent === "search").map((t) => t.text);
    assertEquals(
      solo.transcript.map((t) => t.text),
      [
        ...teamQueries.map((q) => q.replace("#### ", "#### search ")),
        `#### answer ${task.answer}`,
      ],
    );
    assertEquals(solo.transcript.at(-1)!.teamReward, 1);
  }
  const task = searchSolo.generate(7, { split: "train" }) as SearchTask;
  const s0 = searchSolo.reset(task) as SearchState;
  // Parsing: the kind word decides; the team's bare form is not enough.
  const q = searchSolo.parseAction("agent", `I need the first hop.\n#### search ${task.chain[0]}`);
  assert(q.ok && q.action.kind === "query" && q.action.query === task.chain[0]);
  const a = searchSolo.parseAction("agent", "#### Answer: Velmar");
  assert(a.ok && a.action.kind === "answer" && a.action.answer === "Velmar");
  for (const text of [`#### ${task.chain[0]}`, "#### search", "#### answer  "]) {
    const p = searchSolo.parseAction("agent", text);
    assert(!p.ok && p.invalid.code === "malformed", text);
  }
  // A query earns the share of the needed documents it newly found, as the team's search agent.
  const r1 = searchSolo.step(s0, "agent", q.action);
  const m1 = mas.step(mas.reset(task), "search", { kind: "query", query: task.chain[0] });
  assertEquals([r1.teamReward, r1.localReward], [0, m1.localReward]);
  assert(r1.localReward > 0);
  assertEquals((r1.state as SearchState).retrieved, (m1.state as SearchState).retrieved);
  assertEquals([r1.state.turn, r1.state.cursor], [1, 0], "one agent: every step is a turn");
  // A wrong answer costs the turn and nothing else; the prompt lists it; a right one ends it.
  const w = searchSolo.step(r1.state, "agent", { kind: "answer", answer: "Nobody" });
  assertEquals([w.teamReward, w.localReward, w.terminated, w.truncated], [0, 0, false, false]);
  assert(
    promptText(searchSolo.observe(w.state, "agent", "chat")).includes("Rejected answers: Nobody"),
  );
  const ok = searchSolo.step(w.state, "agent", { kind: "answer", answer: task.answer });
  assertEquals([ok.teamReward, ok.terminated], [1, true]);
  assertEquals(ok.info.finalRewards, { agent: 1 });
  // Out of turns after twice the team's turns, unusable messages at −2 each.
  assertEquals(soloTurns(task), 2 * task.maxTurns);
  let s: SearchState = s0;
  const junk = searchSolo.parseAction("agent", "no idea");
  assert(!junk.ok);
  for (let i = 0; i < soloTurns(task); i++) {
    assertEquals(s.truncated, false);
    const r = searchSolo.step(s, "agent", junk.invalid);
    assertEquals(r.localReward, FORMAT_PENALTY);
    assertEquals(r.info.finalRewards, i === soloTurns(task) - 1 ? { agent: 0 } : undefined);
    s = r.state;
  }
  assertEquals([s.truncated, currentAgent(searchSolo, s)], [true, null]);
});

Deno.test("math_solo_v1: the first answer ends the episode; unusable messages retry until the turns run out", () => {
  const task = mathSolo.generate(3, { split: "train" });
  const s0 = mathSolo.reset(task);
  const right = mathSolo.oracle(s0, "reasoner");
  const ok = mathSolo.step(s0, "reasoner", right.action);
  assertEquals([ok.teamReward, ok.localReward, ok.terminated], [1, 0, true]);
  assertEquals(ok.info.finalRewards, { reasoner: 1 });
  assert(mathSolo.success(ok.state));
  const wrongText = `so it is \\boxed{${task.display}1}`;
  const wrong = mathSolo.parseAction("reasoner", wrongText);
  assert(wrong.ok);
  const bad = mathSolo.step(s0, "reasoner", wrong.action);
  assertEquals(
    [bad.teamReward, bad.localReward, bad.terminated],
    [0, 0, true],
    "a wrong answer ends it too",
  );
  assert(!mathSolo.success(bad.state));
  // Unusable messages: −2 each, one turn each, the prompt says what was wrong.
  let s: MathSoloState = s0;
  const none = mathSolo.parseAction("reasoner", "I think it is 12");
  assert(!none.ok);
  for (let i = 0; i < task.maxTurns; i++) {
    assertEquals([s.turn, s.cursor], [i, 0]);
    const r = mathSolo.step(s, "reasoner", none.invalid);
    assertEquals([r.teamReward, r.localReward], [0, FORMAT_PENALTY]);
    s = r.state;
    if (i === 0) {
      const p = promptText(mathSolo.observe(s, "reasoner", "chat"));
      assert(p.includes("no usable answer") && p.includes("\\boxed{}"), p);
      assert(compact(mathSolo.observe(s, "reasoner", "compact")).startsWith("math solo t2\n"));
    }
  }
  assertEquals([s.turn, s.truncated, s.terminated], [task.maxTurns, true, false]);
});

Deno.test("code_solo_v1: ends when every reference test passes; hidden results never reach the prompt", async () => {
  const task = codeSolo.generate(2, { split: "train" });
  let s: CodeSoloState = codeSolo.reset(task);
  // A function that returns nothing useful: pass rate < 1, the episode goes on.
  // It prints its (hidden) input: what it printed must not reach the prompt.
  const wrongCode =
    `function ${task.fnName}() { console.log("SEC" + "RET" + JSON.stringify(arguments[0])); return "nope"; }`;
  const r1 = await act(
    codeSolo,
    s,
    "coder",
    "```javascript\n" + wrongCode + "\n```",
    trustedExecutor,
  );
  assert(r1.teamReward < 1 && !r1.terminated, `pass rate ${r1.teamReward}`);
  assertEquals([r1.state.turn, r1.state.cursor, r1.localReward], [1, 0, 0]);
  assert(r1.state.code!.refFailures.length > 0, "the env itself knows the failures");
  assert(r1.state.code!.output.includes("SECRET"), "and what the code printed on hidden inputs");
  for (const style of ["compact", "chat"] as const) {
    const p = promptText(codeSolo.observe(r1.state, "coder", style));
    assert(p.includes(wrongCode.slice(0, 40)), "the previous code is shown");
    assert(!/SECRET|expected|\d+\/\d+ reference/.test(p), `hidden results leaked:\n${p}`);
    for (const f of r1.state.code!.refFailures) {
      assert(!p.includes(f.slice(0, 30)), `failure leaked: ${f}`);
    }
  }
  assert(
    promptText(codeSolo.observe(r1.state, "coder", "chat")).includes(
      "did not pass every hidden test",
    ),
  );
  // Code that does not load: the error (independent of the hidden cases) is shown.
  const r2 = await act(
    codeSolo,
    r1.state,
    "coder",
    "```javascript\nfunction (\n```",
    trustedExecutor,
  );
  assertEquals([r2.teamReward, r2.localReward, r2.terminated], [0, 0, false]);
  assertEquals((r2.info.invalid as Invalid).code, "exec_error");
  assert(/did not load: SyntaxError/.test(promptText(codeSolo.observe(r2.state, "coder", "chat"))));
  // The reference solution passes everything: reward 1, the episode ends, success.
  s = r2.state;
  const r3 = await act(
    codeSolo,
    s,
    "coder",
    "```javascript\n" + task.solution + "\n```",
    trustedExecutor,
  );
  assertEquals([r3.teamReward, r3.terminated, r3.state.turn], [1, true, 3]);
  assertEquals(r3.info.finalRewards, { coder: 1 });
  assert(codeSolo.success(r3.state));
  // Executed and native oracle agree.
  const native = codeSolo.step(
    codeSolo.reset(task),
    "coder",
    codeSolo.oracle(codeSolo.reset(task), "coder").action,
  );
  assertEquals(native.teamReward, 1);
  // Out of turns: unusable messages every turn.
  s = codeSolo.reset(task);
  const empty = codeSolo.parseAction("coder", "");
  assert(!empty.ok);
  for (let i = 0; i < task.maxTurns; i++) s = codeSolo.step(s, "coder", empty.invalid).state;
  assertEquals([s.turn, s.truncated, codeSolo.success(s)], [task.maxTurns, true, false]);
  assert(
    promptText(
      codeSolo.observe(
        codeSolo.step(codeSolo.reset(task), "coder", empty.invalid).state,
        "coder",
        "chat",
      ),
    ).includes("had no code"),
  );
});

/** Every distinct task of the default difficulty in a split (72 in all). */
function tttTasks(split: "train" | "test") {
  const byKey = new Map<string, ReturnType<typeof ticTacToeSolo.generate>>();
  for (let seed = 0; seed < 600; seed++) {
    const t = ticTacToeSolo.generate(seed, { split });
    byKey.set(ticTacToeSolo.taskKey(t), t);
  }
  return [...byKey.values()];
}

function playTtt(
  task: ReturnType<typeof ticTacToeSolo.generate>,
  pick: (s: TttSoloState) => number,
) {
  let s = ticTacToeSolo.reset(task);
  let steps = 0;
  while (currentAgent(ticTacToeSolo, s) !== null) {
    assertEquals([s.turn, s.cursor], [steps, 0], "one policy move per turn");
    const before = s.board.replaceAll(".", "").length;
    const r = ticTacToeSolo.step(s, "player", { cell: pick(s) });
    const after = r.state.board.replaceAll(".", "").length;
    // The opponent replies inside the same step unless the game is over.
    assertEquals(after - before, r.terminated && after - before === 1 ? 1 : 2);
    s = r.state;
    steps++;
  }
  return s;
}

Deno.test("tic_tac_toe_solo_v1: the oracle wins ≥ 85% against the scripted opponent and never loses; random play wins < 55%", () => {
  for (const split of ["train", "test"] as const) {
    const tasks = tttTasks(split);
    assertEquals(tasks.length, split === "train" ? 56 : 16, "2-move openings: 72 tasks");
    const marks = new Set(tasks.map((t) => ticTacToeSolo.reset(t).mark));
    assertEquals([...marks].sort(), ["o", "x"], "the policy plays both sides");
    let wins = 0, losses = 0;
    for (const t of tasks) {
      const s = playTtt(t, (st) => bestVsRandom(st.board));
      if (ticTacToeSolo.success(s)) wins++;
      if (s.winner !== "draw" && s.winner !== s.mark) losses++;
    }
    // Measured: 53/56 train, 14/16 test wins; no losses (documented in tic_tac_toe/solo.ts).
    assert(wins / tasks.length >= 0.85, `${split}: oracle won ${wins}/${tasks.length}`);
    assertEquals(losses, 0, `${split}: oracle losses`);
    const rng = new Rng(11);
    let rWins = 0, rLosses = 0, n = 0;
    for (let rep = 0; rep < 10; rep++) {
      for (const t of tasks) {
        const s = playTtt(t, (st) => rng.pick(legalMoves(st.board)));
        n++;
        if (ticTacToeSolo.success(s)) rWins++;
        else if (s.winner !== "draw") rLosses++;
      }
    }
    // Measured: about 45% wins, 44% losses.
    assert(rWins / n < 0.55 && rWins / n > 0.3, `${split}: random won ${rWins}/${n}`);
    assert(rLosses / n > 0.3, `${split}: random lost ${rLosses}/${n}`);
  }
});

Deno.test("tic_tac_toe_solo_v1: sides, opponent and rewards are pure functions of the task", () => {
  for (const t of tttTasks("train")) {
    const s = ticTacToeSolo.reset(t);
    assertEquals(s.mark, hashedSide(t), "2-move openings: the hashed side holds");
    // X is to move after a 2-move opening: playing O, the policy sees the opponent's first move.
    assertEquals(s.moves.length, s.mark === "x" ? 2 : 3);
    assertEquals(ticTacToeSolo.reset(t), s, "reset is deterministic");
    if (s.mark === "o") assertEquals(s.moves[2], opponentMove(t, boardOf(t.opening)));
  }
  // 4-move openings: the opponent's first move never ends the game before the policy moves.
  for (let seed = 0; seed < 300; seed++) {
    const t = ticTacToeSolo.generate(seed, { split: "train", difficulty: { openingMoves: 4 } });
    assertEquals(currentAgent(ticTacToeSolo, ticTacToeSolo.reset(t)), "player");
  }
  // Rewards: a forfeit is a loss; a taken cell costs −1, unusable text −2.
  const t = tttTasks("train")[0];
  const s = ticTacToeSolo.reset(t);
  const taken = ticTacToeSolo.step(s, "player", { cell: s.moves[0] });
  assertEquals([taken.localReward, taken.terminated, ticTacToeSolo.success(taken.state)], [
    -1,
    true,
    false,
  ]);
  assertEquals(taken.info.finalRewards, { player: -1 });
  const done = ticTacToeSolo.solve(t);
  const last = done.transcript[done.transcript.length - 1];
  const outcome = done.finalState.winner === "draw"
    ? 0
    : done.finalState.winner === done.finalState.mark
    ? 1
    : -1;
  assertEquals(last.localReward, outcome, "the last step carries the game's outcome");
  assertEquals(
    ticTacToeSolo.success({ ...done.finalState, winner: "draw" }),
    false,
    "a draw is not a success",
  );
});

Deno.test("demonstrations of a solo env: the plan agent's MAS answers, without the tool line", () => {
  const solo = getEnv("plan_path_solo_v1"), mas = getEnv("plan_path_v1");
  const d = demonstrations(solo, { episodes: 5, seed: 20 });
  assertEquals(d.successes, 5);
  assertEquals(d.records.map((r) => r.meta.agent), ["plan", "plan", "plan", "plan", "plan"]);
  const masPlan = demonstrations(mas, { episodes: 5, seed: 20, agents: ["plan"] });
  const completion = (r: (typeof d.records)[number]) => ("completion" in r ? r.completion : "");
  assertEquals(d.records.map(completion), masPlan.records.map(completion));
  for (const r of d.records) {
    assert(
      "prompt" in r && r.prompt.startsWith("plan_path solo t1\n") && !r.prompt.includes("tool"),
    );
  }
  assertThrows(
    () => demonstrations(solo, { episodes: 1, agents: ["tool"] }),
    "DemoOptionsError",
    "plan",
  );
  assertThrows(() => demonstrations(solo, { episodes: 1, helperTools: true }), "DemoOptionsError");
});

Deno.test("deno task demos writes a solo env's demonstrations", async () => {
  const out = await Deno.makeTempFile({ suffix: ".jsonl" });
  try {
    const cli = new URL("../../src/cli/demos.ts", import.meta.url).pathname;
    const args = [
      "run",
      "-A",
      cli,
      "--env",
      "math_solo_v1",
      "--episodes",
      "4",
      "--style",
      "chat",
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
        demonstrations(mathSolo as AnyEnvDefinition, { episodes: 4, style: "chat" }).records,
      ),
    );
    const parsed = parseSftJsonl(text, out);
    assertEquals(parsed.length, 4, "one answer per episode");
    assert(text.includes("alone") && !/tool agent/.test(text));
  } finally {
    await Deno.remove(out);
  }
});

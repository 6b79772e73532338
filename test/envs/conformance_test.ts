// One conformance test for every registered environment (after PettingZoo's api_test and
// seed_test): API shape, plain-data states that step never mutates, prompts in both styles,
// errors for out-of-turn and after-the-end steps, same seed ⇒ same episode, disjoint splits.
// Episodes are driven by a "chaos" player mixing oracle moves with junk, so penalties, invalid
// results and truncation paths run too. The single-agent (L0) variants (`soloOf`) are registered
// envs like the others and run through every check here; their shape differs (one agent).

import { assert, assertEquals, assertThrows } from "../assert.ts";
import { currentAgent, isInvalid, splitOfTask } from "../../src/envs/api.ts";
import { envIds, ENVS, getEnv } from "../../src/envs/registry.ts";
import { Rng } from "../../src/envs/rng.ts";
import type {
  AnyEnvDefinition,
  EnvState,
  ExecResult,
  Invalid,
  StepResult,
} from "../../src/envs/types.ts";

const JUNK = [
  "",
  "  \n ",
  "hello there",
  "####",
  "#### ???",
  "#### 1",
  "#### 5",
  "#### U R",
  "#### up up left",
  "#### play 1",
  "#### hint red",
  "#### hint 2",
  "#### discard 9",
  "#### 1234 3412 2143 4321",
  "#### Velmar",
  "```js\nconsole.log('U')\n```",
  "```js\nunclosed",
];
const STDOUTS = ["U D L R\n", "1234 3412 2143 4321\n", "nonsense\n", ""];

/** JSON-like values only: what survives structuredClone, postMessage and a JSON log unchanged. */
function assertPlainData(x: unknown, path: string): void {
  if (x === null || typeof x === "string" || typeof x === "boolean") return;
  if (typeof x === "number") return assert(Number.isFinite(x), `${path} is ${x}`);
  if (Array.isArray(x)) return x.forEach((v, i) => assertPlainData(v, `${path}[${i}]`));
  assert(
    typeof x === "object" && Object.getPrototypeOf(x) === Object.prototype,
    `${path} is not plain data (${typeof x})`,
  );
  for (const [k, v] of Object.entries(x as object)) assertPlainData(v, `${path}.${k}`);
}

function deepFreeze<T>(x: T): T {
  if (typeof x === "object" && x !== null && !Object.isFrozen(x)) {
    Object.freeze(x);
    for (const v of Object.values(x)) deepFreeze(v);
  }
  return x;
}

function fakeExecution(rng: Rng): ExecResult {
  const r = rng.int(4);
  if (r === 0) return { ok: false, stdout: "", error: "Error: boom", timedOut: false, ms: 1 };
  if (r === 1) return { ok: false, stdout: "", error: "timeout", timedOut: true, ms: 2000 };
  return { ok: true, stdout: rng.pick(STDOUTS), error: null, timedOut: false, ms: 1 };
}

/** An oracle move half the time, otherwise whatever junk text parses to (tool code gets a made-up run). */
function chaosAction(env: AnyEnvDefinition, s: EnvState, agent: string, rng: Rng): unknown {
  if (rng.float() < 0.5) return env.oracle(s, agent).action;
  const parsed = env.parseAction(agent, rng.pick(JUNK));
  if (!parsed.ok) return parsed.invalid;
  if (env.toolAgents.includes(agent)) return { ...parsed.action, execution: fakeExecution(rng) };
  return parsed.action;
}

interface Trace {
  steps: {
    agent: string;
    team: number;
    local: number;
    end: [boolean, boolean];
    invalid: string | null;
  }[];
  final: EnvState;
}

function checkStep(env: AnyEnvDefinition, s: EnvState, r: StepResult<EnvState>): void {
  assert(
    Number.isFinite(r.teamReward) && Number.isFinite(r.localReward),
    `${env.id}: rewards must be finite`,
  );
  assertEquals(r.terminated, r.state.terminated, `${env.id}: terminated flag and state disagree`);
  assertEquals(r.truncated, r.state.truncated, `${env.id}: truncated flag and state disagree`);
  assert(!(r.terminated && r.truncated), `${env.id}: an episode ends one way`);
  assertEquals(r.state.envId, env.id);
  if (r.info.invalid !== undefined) {
    assert(isInvalid(r.info.invalid), `${env.id}: info.invalid must be an Invalid`);
  }
  if (r.terminated || r.truncated) {
    assert(r.info.finalRewards !== undefined, `${env.id}: the last step reports finalRewards`);
    for (const a of Object.keys(r.info.finalRewards)) assert(env.possibleAgents.includes(a));
  }
  assert(r.state.turn >= s.turn, `${env.id}: time runs forward`);
  if (!r.terminated && !r.truncated) assert(currentAgent(env, r.state) !== null);
}

function checkObservation(env: AnyEnvDefinition, s: EnvState, agent: string): void {
  const compact = env.observe(s, agent, "compact");
  assert(
    compact.style === "compact" && compact.text.length > 0,
    `${env.id}: compact prompt for ${agent}`,
  );
  const chat = env.observe(s, agent, "chat");
  assert(chat.style === "chat", `${env.id}: chat prompt style`);
  assertEquals(chat.messages.map((m) => m.role), ["system", "user"]);
  assert(
    chat.messages.every((m) => m.content.trim().length > 0),
    `${env.id}: chat messages have content`,
  );
}

/** Plays one episode; freezes every state first so any mutation throws, and compares snapshots. */
function rollout(env: AnyEnvDefinition, seed: number): Trace {
  const rng = new Rng(seed);
  let s: EnvState = deepFreeze(env.reset(env.generate(seed, { split: "train" })));
  const steps: Trace["steps"] = [];
  let turnStart = s;
  for (let i = 0; i < 500; i++) {
    const agent = currentAgent(env, s);
    if (agent === null) break;
    checkObservation(env, s, agent);
    if (s.cursor === 0) turnStart = s;
    if (env.parallel) {
      // Parallel envs: every agent of a turn sees the turn-start state, whatever came before it.
      for (const style of ["compact", "chat"] as const) {
        assertEquals(
          env.observe(s, agent, style),
          env.observe(turnStart, agent, style),
          `${env.id}: parallel observe`,
        );
      }
    }
    const snapshot = structuredClone(s);
    const action = chaosAction(env, s, agent, rng);
    const r = env.step(s, agent, action);
    assertEquals(s, snapshot, `${env.id}: step mutated its input state`);
    checkStep(env, s, r);
    assertPlainData(r.state, `${env.id} state`);
    assertPlainData(r.info, `${env.id} info`);
    const invalid = (r.info.invalid as Invalid | undefined)?.code ?? null;
    steps.push({
      agent,
      team: r.teamReward,
      local: r.localReward,
      end: [r.terminated, r.truncated],
      invalid,
    });
    s = deepFreeze(r.state);
  }
  assert(
    currentAgent(env, s) === null,
    `${env.id}: episode of seed ${seed} did not end within 500 steps`,
  );
  assert(env.render(s).text.length > 0);
  return { steps, final: s };
}

Deno.test("registry: ids are unique, versioned, and resolvable", () => {
  assertEquals(new Set(envIds()).size, ENVS.length);
  for (const id of envIds()) {
    assert(/^[a-z0-9_]+_v\d+$/.test(id), `${id} is not a versioned id like plan_path_v1`);
    assertEquals(getEnv(id).id, id);
  }
  const e = assertThrows(() => getEnv("plan_path"));
  assertEquals(e.name, "UnknownEnvError");
});

for (const env of ENVS) {
  Deno.test(`${env.id}: definition shape`, () => {
    // Multi-agent envs have two or more agents; a single-agent variant has exactly one.
    if (env.soloOf === undefined) assert(env.possibleAgents.length >= 2, "a team needs 2+ agents");
    else assertEquals(env.possibleAgents.length, 1, "a single-agent variant has one agent");
    assert(new Set(env.possibleAgents).size === env.possibleAgents.length, "agent names repeat");
    assertEquals(
      [...env.turnOrder].sort(),
      [...env.possibleAgents].sort(),
      "turnOrder is a permutation",
    );
    assert(env.toolAgents.every((a) => env.possibleAgents.includes(a)));
    assertEquals(
      env.toolAgents.length > 0,
      typeof env.execute === "function",
      "execute iff tool agents",
    );
    assert(env.testFraction > 0 && env.testFraction < 1);
    assert(env.description.length > 0);
    const e = assertThrows(() =>
      env.generate(0, { split: "train", difficulty: { noSuchKnob: 1 } })
    );
    assertEquals(e.name, "DifficultyError");
  });

  Deno.test(`${env.id}: generator is seeded and splits are disjoint`, () => {
    assertEquals(env.generate(7, { split: "train" }), env.generate(7, { split: "train" }));
    const train = new Set<string>(), test = new Set<string>();
    for (let seed = 0; seed < 150; seed++) {
      const tr = env.generate(seed, { split: "train" }), te = env.generate(seed, { split: "test" });
      assertEquals(splitOfTask(env, tr), "train");
      assertEquals(splitOfTask(env, te), "test");
      train.add(env.taskKey(tr));
      test.add(env.taskKey(te));
    }
    assertEquals([...train].filter((k) => test.has(k)), [], "a task is in both splits");
    assert(train.size > 5 && test.size > 5, "the generator should vary with the seed");
  });

  Deno.test(`${env.id}: episodes are plain data, never mutated, and reproducible`, () => {
    let invalids = 0;
    for (let seed = 0; seed < 25; seed++) {
      const a = rollout(env, seed);
      assertEquals(rollout(env, seed), a, "same seed must give the same episode");
      invalids += a.steps.filter((x) => x.invalid !== null).length;
    }
    assert(invalids > 0, "chaos play should have produced invalid actions");
  });

  Deno.test(`${env.id}: turn and end-of-episode errors`, () => {
    const s = env.reset(env.generate(1, { split: "train" }));
    const agent = currentAgent(env, s)!;
    // A single-agent env has no other agent: a made-up name is out of turn just the same.
    const other = env.possibleAgents.find((a) => a !== agent) ?? "nobody";
    const move = env.oracle(s, agent).action;
    assertEquals(assertThrows(() => env.step(s, other, move)).name, "NotYourTurnError");
    const done = env.solve(env.generate(1, { split: "train" })).finalState;
    assertEquals(currentAgent(env, done), null);
    assertEquals(assertThrows(() => env.step(done, agent, move)).name, "EpisodeOverError");
  });

  Deno.test(`${env.id}: an unparseable message is penalised, not thrown`, () => {
    const s = env.reset(env.generate(2, { split: "train" }));
    const agent = currentAgent(env, s)!;
    const parsed = env.parseAction(agent, "");
    assert(!parsed.ok && parsed.invalid.code === "empty");
    const r = env.step(s, agent, parsed.invalid);
    assert(r.localReward < 0, "an empty message must cost its agent");
    assertEquals((r.info.invalid as Invalid).code, "empty");
  });
}

for (const env of ENVS.filter((e) => e.toolAgents.length > 0)) {
  Deno.test(`${env.id}: tool code that skipped execute() is refused`, () => {
    const s = env.reset(env.generate(3, { split: "train" }));
    const agent = currentAgent(env, s)!;
    assert(env.toolAgents.includes(agent));
    const parsed = env.parseAction(agent, "```js\nconsole.log(1)\n```");
    assert(parsed.ok);
    assertEquals(assertThrows(() => env.step(s, agent, parsed.action)).name, "NotExecutedError");
  });
}

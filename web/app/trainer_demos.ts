// The teaching demos on the live policy, as the trainer host runs them (always from its GPU job
// queue, never during a training step): next-token logits of a prompt, log π of candidate
// completions under the current policy, and tic-tac-toe against the greedy policy.

import * as Comlink from "comlink";
import type { RlSession } from "../../src/rl/session.ts";
import { encodePrompt } from "../../src/rl/rollout.ts";
import { promptStyleFor } from "../../src/rl/generation.ts";
import { act, currentAgent } from "../../src/envs/api.ts";
import type { CodeExecutor } from "../../src/envs/types.ts";
import { getEnv } from "../../src/envs/registry.ts";
import type { LogitsRequest, LogitsResult, TttView } from "./protocol.ts";

const TTT_ID = "tic_tac_toe_v1";

/** The generator (on the trained GPU model) and adapter an agent samples with. */
function agentModel(s: RlSession, agent: string) {
  const i = s.map.byAgent[agent];
  if (i === undefined) {
    throw Object.assign(
      new Error(
        `${s.env.id} has no agent "${agent}" (agents: ${Object.keys(s.map.byAgent).join(", ")})`,
      ),
      { name: "ArgumentError" },
    );
  }
  const p = s.map.policies[i];
  return { gen: s.policies.generators[p.trainer], adapter: p.adapter ?? undefined, policy: p };
}

/**
 * Logits of every position of `ids` on slot 0. The policies' models are training models, whose
 * forward computes all rows' logits (GpuModel refuses a subset), so ask for all: [n, V].
 */
async function allLogits(
  s: RlSession,
  agent: string,
  ids: readonly number[],
): Promise<{ logits: Float32Array; V: number }> {
  const pol = agentModel(s, agent), model = pol.gen.model;
  const rows = ids.map((token, pos) => ({ token, slot: 0, pos, adapter: pol.adapter }));
  return { logits: await model.forward(rows, rows.map((_, i) => i)), V: model.config.vocabSize };
}

/** The prompt of held-out task `task` at `agent`'s first turn, the agents before it playing greedily. */
async function taskPrompt(
  s: RlSession,
  agent: string,
  task: number,
  executor: CodeExecutor | undefined,
): Promise<number[]> {
  const tok = s.tokenizer;
  const ctx = { env: s.env, tokenizer: tok, policyOf: (a: string) => s.policies.agentPolicy(a) };
  const style = promptStyleFor(s.cfg.rollout.promptStyle, tok);
  let st = s.env.reset(
    s.env.generate(s.cfg.env.testSeed + task, { split: "test", difficulty: s.cfg.env.difficulty }),
  );
  // Step to the agent's first turn with the policies' own greedy moves, if it does not start.
  for (
    let guard = 0;
    guard < 8 && currentAgent(s.env, st) !== null && currentAgent(s.env, st) !== agent;
    guard++
  ) {
    const who = currentAgent(s.env, st)!, p = s.policies.agentPolicy(who);
    const [g] = await p.generator.generate([{
      prompt: encodePrompt(ctx, st, who, style),
      maxNewTokens: s.cfg.rollout.maxNewTokens,
      stopIds: tok.stopIds,
      adapter: p.adapter,
      sampling: { temperature: 0 },
    }]);
    st = (await act(s.env, st, who, tok.decode(g.ids, { skipSpecialTokens: true }), executor))
      .state;
  }
  return encodePrompt(ctx, st, agent, style);
}

/** The next-token logits after a prompt (text, or a held-out task's observation), full vocabulary. */
export async function promptLogits(
  s: RlSession,
  req: LogitsRequest,
  executor: CodeExecutor | undefined,
): Promise<LogitsResult> {
  const tok = s.tokenizer, pol = agentModel(s, req.agent);
  let ids = req.text !== undefined
    ? tok.encode(req.text)
    : await taskPrompt(s, req.agent, req.task ?? 0, executor);
  ids = [...ids, ...(req.appendIds ?? [])];
  const model = pol.gen.model;
  if (ids.length > model.maxLen) ids = ids.slice(ids.length - model.maxLen);
  const all = await allLogits(s, req.agent, ids);
  const logits = all.logits.slice((ids.length - 1) * all.V, ids.length * all.V);
  const top = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a]).slice(0, 64);
  const labels = Object.fromEntries(top.map((id) => [id, tok.decode([id])]));
  const policy = pol.policy;
  return Comlink.transfer({
    prompt: tok.decode(ids),
    promptIds: ids,
    logits,
    labels,
    agent: req.agent,
    adapter: `${policy.name}${policy.adapter === null ? " (full weights)" : " (LoRA adapter)"}`,
  }, [logits.buffer]);
}

/** log π of each candidate's completion tokens under `agent`'s current policy. */
export async function completionLogprobs(
  s: RlSession,
  agent: string,
  seqs: readonly { promptIds: number[]; completionIds: number[] }[],
): Promise<number[][]> {
  const out: number[][] = [];
  for (const q of seqs) {
    const ids = [...q.promptIds, ...q.completionIds];
    const { logits, V } = await allLogits(s, agent, ids.slice(0, -1));
    // log softmax at each completion position (T = 1), read at the token that followed.
    const lp: number[] = [];
    for (let t = q.promptIds.length - 1; t < ids.length - 1; t++) {
      const row = logits.subarray(t * V, (t + 1) * V);
      let mx = -Infinity, z = 0;
      for (const v of row) mx = Math.max(mx, v);
      for (const v of row) z += Math.exp(v - mx);
      lp.push(row[ids[t + 1]] - mx - Math.log(z));
    }
    out.push(lp);
  }
  return out;
}

/** Tic-tac-toe against the current policy (greedy), on an empty board. */
export class TicTacToeDemo {
  readonly env = getEnv(TTT_ID);
  // deno-lint-ignore no-explicit-any
  st: any = null;
  human = "player_x";
  policy = "player_o";
  lastText: string | null = null;
  lastInvalid: string | null = null;
  note = "";

  /** `session`: the live session, or a NoSessionError. */
  constructor(private readonly session: () => RlSession) {}

  view(): TttView {
    const over = currentAgent(this.env, this.st) === null;
    const w = this.st.winner as string | null;
    const result = !over
      ? `${currentAgent(this.env, this.st) === this.human ? "your" : "the policy's"} move`
      : this.st.forfeit
      ? `${this.st.forfeit === this.human ? "you" : "the policy"} forfeit${
        this.st.forfeit === this.human ? "" : "s"
      } (illegal or unreadable move)`
      : w === "draw"
      ? "draw"
      : `${(w === "x") === (this.human === "player_x") ? "you win" : "the policy wins"}`;
    return {
      board: this.env.render(this.st),
      human: this.human,
      policy: this.policy,
      lastPolicyText: this.lastText,
      lastPolicyInvalid: this.lastInvalid,
      over,
      result,
      note: this.note,
    };
  }

  async policyMoves() {
    const s = this.session();
    while (currentAgent(this.env, this.st) === this.policy) {
      const trained = s.env.id === TTT_ID;
      const pol = s.policies.agentPolicy(trained ? this.policy : s.env.possibleAgents[0]);
      const prompt = encodePrompt(
        { env: this.env, tokenizer: s.tokenizer, policyOf: () => pol },
        this.st,
        this.policy,
        promptStyleFor(s.cfg.rollout.promptStyle, s.tokenizer),
      );
      const [g] = await pol.generator.generate([{
        prompt,
        maxNewTokens: Math.min(32, s.cfg.rollout.maxNewTokens),
        stopIds: s.tokenizer.stopIds,
        adapter: pol.adapter,
        sampling: { temperature: 0 },
      }]);
      const text = s.tokenizer.decode(g.ids, { skipSpecialTokens: true });
      const r = await act(this.env, this.st, this.policy, text);
      this.lastText = text;
      this.lastInvalid = r.info.invalid ? `${r.info.invalid.code}: ${r.info.invalid.reason}` : null;
      this.st = r.state;
    }
  }

  async start(humanPlays: "player_x" | "player_o"): Promise<TttView> {
    const s = this.session();
    this.human = humanPlays;
    this.policy = humanPlays === "player_x" ? "player_o" : "player_x";
    this.st = this.env.reset({ opening: [], shaping: false });
    this.lastText = this.lastInvalid = null;
    this.note = s.env.id === TTT_ID
      ? `the policy is this run's ${s.cfg.level} tic-tac-toe policy at step ${s.step} (greedy)`
      : `this run trains ${s.env.id}: its policy (agent ${
        s.env.possibleAgents[0]
      }) has never been trained on tic-tac-toe; start a tic_tac_toe_v1 run to play a trained one`;
    await this.policyMoves();
    return this.view();
  }

  async move(cell: number): Promise<TttView> {
    if (!this.st) throw Object.assign(new Error("start a game first"), { name: "GameError" });
    if (currentAgent(this.env, this.st) !== this.human) return this.view();
    this.st = (await act(this.env, this.st, this.human, `#### ${cell + 1}`)).state;
    await this.policyMoves();
    return this.view();
  }
}

// Search, single agent (search_solo_v1; level L0): one agent with the search engine that both
// searches and answers, as a ReAct-style agent does. Unlike the tool → plan games' single agent
// (the plan agent without its tool), it keeps the team's tool: each message is either a query
// (`#### search <words>`: BM25's top documents join its notes) or an answer (`#### answer
// <name>`), its choice. Same tasks and splits as search_v1.
//
// Budget: the team acts twice a turn (a query, then an answer), so the single agent gets twice
// the team's turns, one message each: as many messages, queries and answers as the team, in any
// order. One agent acts per turn, so every step advances the turn. Rewards as search_v1's two
// roles: a query earns the share of the needed documents it newly found (local), a correct
// answer the team reward 1 and ends the episode, a wrong one nothing (it may search again), an
// unusable message −2; finalRewards names "agent" only (1 if answered correctly, else 0).

import {
  advanceClock,
  assertTurn,
  FORMAT_PENALTY,
  invalid,
  isInvalid,
  oracleRollout,
} from "../api.ts";
import { buildPrompt } from "../prompt.ts";
import type {
  EnvDefinition,
  Invalid,
  ParseResult,
  Prompt,
  PromptStyle,
  StepResult,
} from "../types.ts";
import {
  DEFAULT_DIFFICULTY,
  ENV_ID as MAS_ID,
  generate,
  isCorrect,
  type SearchDifficulty,
  type SearchTask,
  taskKey,
  TEST_FRACTION,
} from "./corpus.ts";
import {
  bodyAfterMarker,
  coverage,
  initialState,
  missingHop,
  notesText,
  renderSearch,
  runQuery,
  type SearchAction,
  type SearchState,
} from "./env.ts";

export const SOLO_ID = "search_solo_v1";

const AGENTS = ["agent"] as const;

/** The single agent's turns: one message each, as many as the team's messages. */
/** The single agent's messages for each of the team's turns: one for each of its two roles. */
const TURNS_PER_TEAM_TURN = 2;
export const soloTurns = (t: SearchTask): number => TURNS_PER_TEAM_TURN * t.maxTurns;

const KIND = /^(search|answer)\b[\s:]*/i;

function parseAction(_agent: string, text: string): ParseResult<SearchAction> {
  const b = bodyAfterMarker(text, "query or answer");
  if (!b.ok) return b;
  const m = KIND.exec(b.body);
  const rest = m ? b.body.slice(m[0].length).trim() : "";
  if (!m || !/[a-z0-9]/i.test(rest)) {
    return {
      ok: false,
      invalid: invalid(
        "malformed",
        "after `####` write `search` and a query, or `answer` and a name, e.g. `#### search " +
          "founder of Kalo Works` or `#### answer Velmar`",
        text,
      ),
    };
  }
  return {
    ok: true,
    action: m[1].toLowerCase() === "search"
      ? { kind: "query", query: rest }
      : { kind: "answer", answer: rest },
  };
}

function step(s: SearchState, agent: string, a: SearchAction | Invalid): StepResult<SearchState> {
  assertTurn(searchSolo, s, agent);
  const max = soloTurns(s.task);
  if (isInvalid(a)) {
    const clock = advanceClock(s, AGENTS.length, max, false);
    const state = { ...s, ...clock };
    return {
      state,
      teamReward: 0,
      localReward: FORMAT_PENALTY,
      terminated: false,
      truncated: clock.truncated,
      info: { invalid: a, ...(clock.truncated && { finalRewards: { agent: 0 } }) },
    };
  }
  if (a.kind === "query") {
    const clock = advanceClock(s, AGENTS.length, max, false);
    const r = runQuery(s, a.query);
    return {
      state: { ...s, ...clock, queries: r.queries, retrieved: r.retrieved },
      teamReward: 0,
      localReward: r.gain,
      terminated: false,
      truncated: clock.truncated,
      info: {
        hits: r.hits,
        coverage: coverage(s.task, r.retrieved),
        ...(clock.truncated && { finalRewards: { agent: 0 } }),
      },
    };
  }
  const correct = isCorrect(a.answer, s.task.answer);
  const clock = advanceClock(s, AGENTS.length, max, correct);
  const state: SearchState = {
    ...s,
    ...clock,
    terminated: correct,
    correct,
    answers: [...s.answers, a.answer],
  };
  const info: Record<string, unknown> = { correct };
  if (state.terminated || state.truncated) info.finalRewards = { agent: correct ? 1 : 0 };
  return {
    state,
    teamReward: correct ? 1 : 0,
    localReward: 0,
    terminated: state.terminated,
    truncated: state.truncated,
    info,
  };
}

const SYSTEM_SOLO = `You are answering a multi-hop question about a fictional world alone, with a
search engine; nothing about it is known in advance, everything must be found in the documents.
Each turn, either search (BM25; the top results are added to your notes) or answer. Follow the
chain of facts hop by hop: search for the entity you need next, e.g. a company or a person named
in earlier documents, and answer once the documents hold the answer. End your reply with
\`#### search \` and the query, e.g. \`#### search founder of Kalo Works\`, or with \`#### answer \`
and the short answer (a name), e.g. \`#### answer Velmar\`. A wrong answer costs a turn.`;

function observe(s: SearchState, _agent: string, style: PromptStyle): Prompt {
  const t = s.task;
  const head = `Turn ${s.turn + 1} of ${soloTurns(t)}. Question: ${t.question}`;
  const { past, wrong, docs } = notesText(s);
  return buildPrompt(style, {
    system: SYSTEM_SOLO,
    user: `${head}\n${past}${wrong}\nDocuments found:\n${docs}\nSearch or answer?`,
    compact: `search solo t${s.turn + 1}\nq: ${t.question}\n${docs}\n`,
  });
}

/**
 * Honest oracle, as search_v1's two roles in one: it searches for the next entity of the chain
 * until every needed document is in its notes (naming an entity only once a retrieved document,
 * or the question, names it), then answers.
 */
function oracle(s: SearchState): { text: string; action: SearchAction } {
  const t = s.task;
  const hop = missingHop(s);
  if (hop < 0) {
    return { text: `#### answer ${t.answer}`, action: { kind: "answer", answer: t.answer } };
  }
  const query = t.chain[hop];
  return { text: `#### search ${query}`, action: { kind: "query", query } };
}

export const searchSolo: EnvDefinition<SearchTask, SearchState, SearchAction, SearchDifficulty> = {
  id: SOLO_ID,
  description:
    "Single agent (L0) Search: one agent with the search engine, each message a query (#### search ...) or an answer (#### answer ...); twice the team's turns",
  possibleAgents: AGENTS,
  turnOrder: AGENTS,
  parallel: false,
  symmetric: false,
  toolAgents: [],
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  soloOf: MAS_ID,
  turnsPerTeamTurn: TURNS_PER_TEAM_TURN,
  generate,
  taskKey,
  reset: (task) => initialState(SOLO_ID, task),
  observe,
  parseAction,
  step,
  success: (s) => s.correct,
  oracle,
  solve: (task) => oracleRollout(searchSolo, task),
  render: (s) => renderSearch(s, "search solo"),
};

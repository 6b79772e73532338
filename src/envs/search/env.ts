// Search (search_v1): multi-hop QA over a generated local corpus. Each turn the search agent sends
// a query (`#### words`), BM25 returns the top documents, and the reasoner answers (`#### answer`).
// Rewards (docs/algorithm.md "1/0, partial credit for the search agent"): a correct answer is team +1 and
// ends the episode; each query earns the search agent the share of needed documents it newly
// found. A wrong answer before the last turn costs nothing: the team may search again.

import {
  advanceClock,
  assertTurn,
  FORMAT_PENALTY,
  invalid,
  isInvalid,
  oracleRollout,
  round6,
} from "../api.ts";
import { buildPrompt } from "../prompt.ts";
import type {
  EnvDefinition,
  EnvState,
  Invalid,
  ParseResult,
  Prompt,
  PromptStyle,
  Rendered,
  StepResult,
} from "../types.ts";
import { bm25 } from "./bm25.ts";
import {
  DEFAULT_DIFFICULTY,
  ENV_ID,
  generate,
  isCorrect,
  type SearchDifficulty,
  type SearchTask,
  taskKey,
  TEST_FRACTION,
} from "./corpus.ts";

export type SearchAction = { kind: "query"; query: string } | { kind: "answer"; answer: string };

export interface SearchState extends EnvState {
  task: SearchTask;
  queries: { query: string; hits: number[] }[];
  /** Every document retrieved so far, in first-seen order. */
  retrieved: number[];
  answers: string[];
  correct: boolean;
}

const AGENTS = ["search", "reasoner"] as const;
const MAX_QUERY = 200;

/** A fresh episode's state under `envId` (the team's, or its single-agent variant's). */
export function initialState(envId: string, task: SearchTask): SearchState {
  return {
    envId,
    turn: 0,
    cursor: 0,
    terminated: false,
    truncated: false,
    task,
    queries: [],
    retrieved: [],
    answers: [],
    correct: false,
  };
}

/** The text after the last `####` (its first line), or why there is none; `what` names it. */
export function bodyAfterMarker(
  text: string,
  what: string,
): { ok: true; body: string } | { ok: false; invalid: Invalid } {
  if (text.trim() === "") {
    return { ok: false, invalid: invalid("empty", "the message is empty", text) };
  }
  const i = text.lastIndexOf("####");
  if (i < 0) {
    return { ok: false, invalid: invalid("no_answer", `no \`####\` before the ${what}`, text) };
  }
  const body = text.slice(i + 4).trim().split("\n")[0].trim();
  if (!/[a-z0-9]/i.test(body)) {
    return {
      ok: false,
      invalid: invalid("malformed", `nothing after \`####\`; write the ${what}`, text),
    };
  }
  if (body.length > MAX_QUERY) {
    return {
      ok: false,
      invalid: invalid("malformed", `the ${what} is over ${MAX_QUERY} characters`, text),
    };
  }
  return { ok: true, body };
}

function parseAction(agent: string, text: string): ParseResult<SearchAction> {
  const b = bodyAfterMarker(text, agent === "search" ? "query" : "answer");
  if (!b.ok) return b;
  return {
    ok: true,
    action: agent === "search"
      ? { kind: "query", query: b.body }
      : { kind: "answer", answer: b.body },
  };
}

export function coverage(t: SearchTask, retrieved: readonly number[]): number {
  return t.gold.filter((g) => retrieved.includes(g)).length / t.gold.length;
}

function stepSearch(s: SearchState, a: SearchAction | Invalid): StepResult<SearchState> {
  const clock = advanceClock(s, AGENTS.length, s.task.maxTurns, false);
  if (isInvalid(a) || a.kind !== "query") {
    const why = isInvalid(a) ? a : invalid("malformed", "the search agent must send a query", "");
    return {
      state: { ...s, ...clock },
      teamReward: 0,
      localReward: FORMAT_PENALTY,
      terminated: false,
      truncated: clock.truncated,
      info: { invalid: why },
    };
  }
  const r = runQuery(s, a.query);
  return {
    state: { ...s, ...clock, queries: r.queries, retrieved: r.retrieved },
    teamReward: 0,
    localReward: r.gain,
    terminated: false,
    truncated: clock.truncated,
    info: { hits: r.hits, coverage: coverage(s.task, r.retrieved) },
  };
}

/**
 * A query against the task's documents: the top-K hits, the notes with the new ones added, and
 * the share of the needed documents it newly found (the search agent's local reward).
 */
export function runQuery(
  s: Pick<SearchState, "task" | "queries" | "retrieved">,
  query: string,
): {
  hits: number[];
  queries: SearchState["queries"];
  retrieved: number[];
  gain: number;
} {
  const hits = bm25(s.task.docs, query, s.task.topK).map((h) => h.id);
  const retrieved = [...s.retrieved, ...hits.filter((h) => !s.retrieved.includes(h))];
  const gain = round6(coverage(s.task, retrieved) - coverage(s.task, s.retrieved));
  return { hits, queries: [...s.queries, { query, hits }], retrieved, gain };
}

function stepReasoner(s: SearchState, a: SearchAction | Invalid): StepResult<SearchState> {
  const answer = !isInvalid(a) && a.kind === "answer" ? a.answer : null;
  const correct = answer !== null && isCorrect(answer, s.task.answer);
  const clock = advanceClock(s, AGENTS.length, s.task.maxTurns, correct);
  const state: SearchState = {
    ...s,
    ...clock,
    terminated: correct,
    correct,
    answers: [...s.answers, answer ?? "(invalid)"],
  };
  const info: Record<string, unknown> = { correct };
  if (answer === null) {
    info.invalid = isInvalid(a) ? a : invalid("malformed", "the reasoner must send an answer", "");
  }
  if (state.terminated || state.truncated) {
    info.finalRewards = {
      reasoner: correct ? 1 : 0,
      search: correct ? 1 : coverage(s.task, s.retrieved),
    };
  }
  return {
    state,
    teamReward: correct ? 1 : 0,
    localReward: answer === null ? FORMAT_PENALTY : 0,
    terminated: state.terminated,
    truncated: state.truncated,
    info,
  };
}

function step(s: SearchState, agent: string, a: SearchAction | Invalid): StepResult<SearchState> {
  assertTurn(search, s, agent);
  return agent === "search" ? stepSearch(s, a) : stepReasoner(s, a);
}

export function docsText(s: Pick<SearchState, "task" | "retrieved">): string {
  if (s.retrieved.length === 0) return "(no documents yet)";
  return s.retrieved.map((id) => `[${id}] ${s.task.docs[id].text}`).join("\n");
}

/** The notes the chat prompts show: past queries, rejected answers (with its newline), documents. */
export function notesText(s: SearchState): { past: string; wrong: string; docs: string } {
  return {
    past: s.queries.length
      ? `Queries so far: ${s.queries.map((q) => q.query).join(" | ")}`
      : "No queries yet.",
    wrong: s.answers.length ? `\nRejected answers: ${s.answers.join(" | ")}` : "",
    docs: docsText(s),
  };
}

/** The first needed document not yet retrieved (its index in the chain), or −1 when all are in. */
export function missingHop(s: SearchState): number {
  return s.task.gold.findIndex((g) => !s.retrieved.includes(g));
}

const SYSTEM_SEARCH =
  `You are the search agent of a two-agent team answering a multi-hop question about a
fictional world; nothing about it is known in advance, everything must be found in the documents. Each turn
you send one keyword query to a search engine (BM25, top results are added to the shared notes); then the
reasoner answers. Name the entity you need next, e.g. a company or a person found in earlier documents.
End your reply with \`#### \` and the query, e.g. \`#### founder of Kalo Works\`.`;

const SYSTEM_REASONER =
  `You are the reasoner of a two-agent team answering a multi-hop question about a
fictional world, using only the retrieved documents. Follow the chain of facts hop by hop.
If the documents are not enough yet, give your best guess; the search agent may search again.
End your reply with \`#### \` and the short answer (a name), e.g. \`#### Velmar\`.`;

function observe(s: SearchState, agent: string, style: PromptStyle): Prompt {
  const t = s.task;
  const head = `Turn ${s.turn + 1} of ${t.maxTurns}. Question: ${t.question}`;
  const { past, wrong, docs } = notesText(s);
  if (agent === "search") {
    return buildPrompt(style, {
      system: SYSTEM_SEARCH,
      user: `${head}\n${past}${wrong}\nDocuments found:\n${docs}\nYour query?`,
      compact: `search t${s.turn + 1}\nq: ${t.question}\n${docs}\n`,
    });
  }
  return buildPrompt(style, {
    system: SYSTEM_REASONER,
    user: `${head}\nDocuments found:\n${docs}${wrong}\nYour answer?`,
    compact: `reason t${s.turn + 1}\nq: ${t.question}\n${docs}\n`,
  });
}

/**
 * Honest oracle: it asks for the next entity of the chain only once a retrieved document (or the
 * question) names it, and answers only when every needed document has been retrieved.
 */
function oracle(s: SearchState, agent: string): { text: string; action: SearchAction } {
  const t = s.task;
  if (agent === "search") {
    const hop = missingHop(s);
    const query = t.chain[hop < 0 ? t.chain.length - 1 : hop];
    return { text: `#### ${query}`, action: { kind: "query", query } };
  }
  const answer = missingHop(s) < 0 ? t.answer : "unknown";
  return { text: `#### ${answer}`, action: { kind: "answer", answer } };
}

/** The notes as the app's search view draws them; `who` heads the text form. */
export function renderSearch(s: SearchState, who = "search"): Rendered {
  const t = s.task;
  const status = s.correct
    ? "answered correctly"
    : s.truncated
    ? "out of turns"
    : `turn ${s.turn + 1}`;
  const lines = [
    `${who}: ${status}`,
    `Q: ${t.question}  (gold: ${t.answer})`,
    ...s.queries.map((q, i) => `query ${i + 1}: ${q.query} -> docs ${q.hits.join(",")}`),
    ...s.answers.map((a, i) => `answer ${i + 1}: ${a}`),
  ];
  return {
    text: lines.join("\n"),
    view: {
      kind: "search",
      status,
      question: t.question,
      gold: t.answer,
      goldDocs: t.gold,
      queries: s.queries,
      answers: s.answers,
      retrieved: s.retrieved.map((id) => ({
        id,
        title: t.docs[id].title,
        text: t.docs[id].text,
        gold: t.gold.includes(id),
      })),
    },
  };
}

export const search: EnvDefinition<SearchTask, SearchState, SearchAction, SearchDifficulty> = {
  id: ENV_ID,
  description:
    "Multi-hop QA over a generated corpus with BM25: search agent (#### query) then reasoner (#### answer)",
  possibleAgents: AGENTS,
  turnOrder: AGENTS,
  parallel: false,
  symmetric: false,
  toolAgents: [],
  defaultDifficulty: DEFAULT_DIFFICULTY,
  testFraction: TEST_FRACTION,
  generate,
  taskKey,
  reset: (task) => initialState(ENV_ID, task),
  observe,
  parseAction,
  step,
  success: (s) => s.correct,
  oracle,
  solve: (task) => oracleRollout(search, task),
  render: (s) => renderSearch(s),
};

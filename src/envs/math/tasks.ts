// Math tasks: the task type, the seeded generator over the templates of problems.ts (disjoint
// train/test splits by a hash of the question), and the JSONL loader for datasets users bring.

import { generateInSplit, intKnob, resolveDifficulty, splitOfKey } from "../api.ts";
import { EnvError, SplitExhaustedError } from "../errors.ts";
import type { GenerateOptions, Split } from "../types.ts";
import { lastBoxed, normalizeAnswer } from "./answer.ts";
import { drawProblem } from "./problems.ts";

export const ENV_ID = "math_v1";

export interface MathDifficulty {
  [key: string]: number;
  /** 1 integer arithmetic, 2 fractions/decimals/percentages, 3 algebra; 0 draws a level per task. */
  level: number;
  /** Rough upper bound of the quantities in a problem (10–1000). */
  maxNumber: number;
  /** docs/algorithm.md: 4 turns. */
  maxTurns: number;
}

export const DEFAULT_DIFFICULTY: MathDifficulty = { level: 0, maxNumber: 50, maxTurns: 4 };

export const TEST_FRACTION = 0.2;

export interface MathTask {
  question: string;
  /** Canonical form (answer.ts) of the answer: what both agents' answers are compared with. */
  answer: string;
  /** The answer as people write it; the oracle boxes this text. */
  display: string;
  /** A program that prints `display`: the oracle tool agent's code. */
  code: string;
  /** 1–3 for generated problems; 0 for dataset problems. */
  level: number;
  maxTurns: number;
}

/** The question alone: one problem is one task whatever the turn limit, so splits never share it. */
export function taskKey(t: MathTask): string {
  return t.question.trim().replace(/\s+/g, " ");
}

export function generate(seed: number, opts: GenerateOptions<MathDifficulty>): MathTask {
  const d = resolveDifficulty(ENV_ID, DEFAULT_DIFFICULTY, opts.difficulty);
  const level = intKnob(ENV_ID, d, "level", 0, 3);
  const max = intKnob(ENV_ID, d, "maxNumber", 10, 1000);
  const maxTurns = intKnob(ENV_ID, d, "maxTurns", 1, 20);
  const env = { id: ENV_ID, testFraction: TEST_FRACTION, taskKey };
  return generateInSplit(env, seed, opts.split, (rng) => {
    const lv = level === 0 ? 1 + rng.int(3) : level;
    const p = drawProblem(rng, lv, max);
    if (p === null) return null;
    const answer = normalizeAnswer(p.display)!;
    return { question: p.question, answer, display: p.display, code: p.code, level: lv, maxTurns };
  });
}

export class MathDatasetError extends EnvError {
  constructor(readonly source: string, readonly line: number, detail: string) {
    super(
      `${source}:${line}: ${detail}; each line must be a JSON object ` +
        `{"question": string, "answer": string | number} (blank lines are skipped)`,
    );
    this.name = "MathDatasetError";
  }
}

/**
 * A task from a question and its answer as written (a `\boxed{}` around it is dropped); the oracle's
 * program just prints it. Null when the answer is empty or its braces do not balance.
 */
export function datasetTask(question: string, written: string, maxTurns = 4): MathTask | null {
  const display = /\\(?:boxed|fbox)/.test(written) ? lastBoxed(written) : written.trim();
  if (display === null) return null;
  const answer = normalizeAnswer(display);
  // The oracle boxes `display`: its braces must balance for \boxed{display} to read back.
  if (answer === null || lastBoxed(`\\boxed{${display}}`) !== display) return null;
  const code = `console.log(${JSON.stringify(display)});\n`;
  return { question, answer, display, code, level: 0, maxTurns };
}

function parseLine(source: string, line: number, text: string, maxTurns: number): MathTask {
  let row: unknown;
  try {
    row = JSON.parse(text);
  } catch (e) {
    throw new MathDatasetError(source, line, `not valid JSON (${(e as Error).message})`);
  }
  if (typeof row !== "object" || row === null || Array.isArray(row)) {
    throw new MathDatasetError(source, line, "not a JSON object");
  }
  const { question, answer } = row as { question?: unknown; answer?: unknown };
  if (typeof question !== "string" || question.trim() === "") {
    throw new MathDatasetError(source, line, `"question" must be a non-empty string`);
  }
  const ok = (typeof answer === "string" && answer.trim() !== "") ||
    (typeof answer === "number" && Number.isFinite(answer));
  if (!ok) {
    throw new MathDatasetError(source, line, `"answer" must be a non-empty string or a number`);
  }
  const task = datasetTask(question.trim(), String(answer).trim(), maxTurns);
  if (task === null) {
    throw new MathDatasetError(
      source,
      line,
      `"answer" ${JSON.stringify(answer)} is not usable (empty, or unbalanced braces)`,
    );
  }
  return task;
}

/**
 * Tasks from JSONL text (one `{"question", "answer"}` object per line; other keys are ignored).
 * Throws MathDatasetError naming the first bad line; `source` names the file in messages.
 */
export function loadMathJsonl(
  text: string,
  opts: { source?: string; maxTurns?: number } = {},
): MathTask[] {
  const source = opts.source ?? "math.jsonl";
  const tasks: MathTask[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    if (raw.trim() !== "") tasks.push(parseLine(source, i + 1, raw, opts.maxTurns ?? 4));
  });
  return tasks;
}

/**
 * The dataset task for `seed` within `split`: the same hash partition as generated tasks, so a
 * user's train and test problems never meet. Deterministic in (tasks, seed, split).
 */
export function pickTask(tasks: readonly MathTask[], seed: number, split: Split): MathTask {
  const pool = tasks.filter((t) => splitOfKey(ENV_ID, taskKey(t), TEST_FRACTION) === split);
  if (pool.length === 0) throw new SplitExhaustedError(ENV_ID, split, tasks.length);
  return pool[((seed % pool.length) + pool.length) % pool.length];
}

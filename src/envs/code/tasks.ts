// Code tasks: a problem (problem.ts) plus the turn limit; the seeded generator over the shipped
// set (disjoint train/test splits by a hash of the problem), and the JSONL loader for problem sets
// users bring, with the same fields as the shipped ones.

import { generateInSplit, intKnob, resolveDifficulty, splitOfKey } from "../api.ts";
import { DifficultyError, EnvError, SplitExhaustedError } from "../errors.ts";
import type { CodeExecutor, GenerateOptions, Split } from "../types.ts";
import {
  casesAsAsserts,
  casesText,
  genProgram,
  type Json,
  parseSuite,
  refProgram,
  suiteTag,
} from "./harness.ts";
import { foldProblem } from "./folds.ts";
import type { CodeProblem } from "./problem.ts";
import { PROBLEMS } from "./problems.ts";

export const ENV_ID = "code_v1";

export interface CodeDifficulty {
  [key: string]: number;
  /** 1 easy, 2 medium, 3 hard; 0 draws from all shipped problems. */
  level: number;
  /** 1: generated array-fold problems (folds.ts, for tiny models) instead of the shipped set. */
  folds: number;
  /** docs/algorithm.md: 5 turns. */
  maxTurns: number;
}

export const DEFAULT_DIFFICULTY: CodeDifficulty = { level: 0, folds: 0, maxTurns: 5 };

/** A quarter of the shipped problems (about 15 of 59) are test problems. */
export const TEST_FRACTION = 0.25;

export interface CodeTask extends CodeProblem {
  maxTurns: number;
}

/** The function and its statement: one problem is one task whatever the turn limit. */
export function taskKey(t: CodeTask): string {
  return `${t.fnName}|${t.statement}`;
}

export function generate(seed: number, opts: GenerateOptions<CodeDifficulty>): CodeTask {
  const d = resolveDifficulty(ENV_ID, DEFAULT_DIFFICULTY, opts.difficulty);
  const level = intKnob(ENV_ID, d, "level", 0, 3);
  const maxTurns = intKnob(ENV_ID, d, "maxTurns", 1, 20);
  const folds = intKnob(ENV_ID, d, "folds", 0, 1);
  if (folds === 1 && level !== 0) {
    throw new DifficultyError(
      ENV_ID,
      `"folds": 1 draws generated problems, which have no level: leave "level" at 0`,
    );
  }
  const pool = PROBLEMS.filter((p) => level === 0 || p.difficulty === level);
  const env = { id: ENV_ID, testFraction: TEST_FRACTION, taskKey };
  return generateInSplit(env, seed, opts.split, (rng) => ({
    ...(folds === 1 ? foldProblem(rng) : structuredClone(rng.pick(pool))),
    maxTurns,
  }));
}

const RESERVED = new Set(
  ("assert assertEqual break case catch class const continue debugger default delete do else " +
    "export extends false finally for function if import in instanceof let new null return " +
    "super switch this throw true try typeof var void while with yield await arguments eval")
    .split(" "),
);

/** Plain JSON with finite numbers only (JSON.parse turns 1e999 into Infinity). */
function isJson(x: unknown): x is Json {
  if (x === null || typeof x === "string" || typeof x === "boolean") return true;
  if (typeof x === "number") return Number.isFinite(x);
  if (Array.isArray(x)) return x.every(isJson);
  return typeof x === "object" && Object.values(x as object).every(isJson);
}

function nonEmpty(x: unknown): x is string {
  return typeof x === "string" && x.trim() !== "";
}

/** Why `row` is not a usable problem, or null. Shared by the loader and the shipped-set test. */
export function problemError(row: unknown): string | null {
  if (typeof row !== "object" || row === null || Array.isArray(row)) return "not a JSON object";
  const p = row as Record<string, unknown>;
  if (p.id !== undefined && !nonEmpty(p.id)) return `"id" must be a non-empty string when given`;
  if (typeof p.difficulty !== "number" || ![1, 2, 3].includes(p.difficulty)) {
    return `"difficulty" must be 1, 2 or 3`;
  }
  if (
    typeof p.fnName !== "string" || !/^[A-Za-z_$][\w$]*$/.test(p.fnName) || RESERVED.has(p.fnName)
  ) {
    return `"fnName" must be a JavaScript identifier (not a keyword, assert or assertEqual)`;
  }
  for (const k of ["signature", "statement", "solution"]) {
    if (!nonEmpty(p[k])) return `"${k}" must be a non-empty string`;
  }
  if (!Array.isArray(p.tests) || p.tests.length === 0) return `"tests" must be a non-empty array`;
  for (const [i, t] of p.tests.entries()) {
    const c = t as Record<string, unknown> | null;
    if (typeof c !== "object" || c === null || !Array.isArray(c.args) || !("expected" in c)) {
      return `tests[${i}] must be {"args": [...], "expected": value}`;
    }
    if (!isJson(c.args) || !isJson(c.expected)) {
      return `tests[${i}] must hold JSON values with finite numbers only`;
    }
  }
  return null;
}

export class CodeDatasetError extends EnvError {
  constructor(readonly source: string, readonly line: number, detail: string) {
    super(
      `${source}:${line}: ${detail}; each line must be a JSON object with "difficulty", ` +
        `"fnName", "signature", "statement", "solution", "tests" (and optionally "id"), like ` +
        `the shipped problems in src/envs/code/problems_*.ts (blank lines are skipped)`,
    );
    this.name = "CodeDatasetError";
  }
}

/**
 * Tasks from JSONL text, one problem per line. Throws CodeDatasetError naming the first bad line.
 * Loading does not run the solutions: check them with `verifyProblem` and a sandbox.
 */
export function loadCodeJsonl(
  text: string,
  opts: { source?: string; maxTurns?: number } = {},
): CodeTask[] {
  const source = opts.source ?? "code.jsonl";
  const tasks: CodeTask[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    if (raw.trim() === "") return;
    let row: unknown;
    try {
      row = JSON.parse(raw);
    } catch (e) {
      throw new CodeDatasetError(source, i + 1, `not valid JSON (${(e as Error).message})`);
    }
    const why = problemError(row);
    if (why !== null) throw new CodeDatasetError(source, i + 1, why);
    const p = row as CodeProblem;
    tasks.push({
      id: p.id ?? p.fnName,
      difficulty: p.difficulty,
      fnName: p.fnName,
      signature: p.signature,
      statement: p.statement,
      solution: p.solution,
      tests: p.tests.map((t) => ({ args: t.args, expected: t.expected })),
      maxTurns: opts.maxTurns ?? DEFAULT_DIFFICULTY.maxTurns,
    });
  });
  return tasks;
}

/** The dataset task for `seed` within `split`, by the same hash partition as shipped problems. */
export function pickTask(tasks: readonly CodeTask[], seed: number, split: Split): CodeTask {
  const pool = tasks.filter((t) => splitOfKey(ENV_ID, taskKey(t), TEST_FRACTION) === split);
  if (pool.length === 0) throw new SplitExhaustedError(ENV_ID, split, tasks.length);
  return pool[((seed % pool.length) + pool.length) % pool.length];
}

/**
 * Runs a problem's reference solution on its reference tests through `executor` (the sandbox),
 * both as data cases (how the coder is scored) and as assertions (the oracle tester's code);
 * returns what went wrong, [] for a sound problem. The oracle assumes this holds.
 */
export async function verifyProblem(
  p: CodeProblem,
  executor: CodeExecutor,
  timeoutMs = 5000,
): Promise<string[]> {
  const asserts = casesAsAsserts(p.fnName, p.tests);
  const runs = [
    {
      kind: "REF" as const,
      program: refProgram(p.fnName, p.solution, p.tests),
      tests: casesText(p.tests),
    },
    { kind: "GEN" as const, program: genProgram(p.fnName, p.solution, asserts), tests: asserts },
  ];
  const problems: string[] = [];
  for (const { kind, program, tests } of runs) {
    const r = await executor.run(program, { timeoutMs });
    const tag = suiteTag(kind, p.fnName, p.solution, tests);
    const suite = parseSuite(r.stdout, kind, tag, p.tests.length);
    if (suite === null) problems.push(`${kind}: no result (${r.error ?? "no output"})`);
    else if (suite.aborted !== null) problems.push(`${kind}: aborted: ${suite.aborted}`);
    else if (!suite.pass.every(Boolean)) {
      problems.push(...suite.failures.map((f) => `${kind}: ${f}`));
    }
  }
  return problems;
}

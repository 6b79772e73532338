// Generated Code problems for tiny models (difficulty knob `folds: 1`): one array fold,
// "filter → map → reduce", stated in words, e.g. "Return the sum of x squared over the numbers x
// in nums that are even." The coder's function is always `compute(nums)`. There are 3,077
// distinct statements; the train/test split is by statement (tasks.ts), so a held-out problem is
// a combination of phrases, or a constant, that training never showed together: a model that
// learned what each phrase means in code can solve it, one that memorized problems cannot.
//
// The shipped problems (problems_*.ts) are written for people and for models that can program;
// a 100k-parameter byte-level model cannot write any of them for an unseen statement, so the
// Code column's warm start and its RL need this family to have something to improve.

import type { Rng } from "../rng.ts";
import type { Json } from "./harness.ts";
import type { CodeProblem } from "./problem.ts";

export const FOLD_FN = "compute";
export const FOLD_SIGNATURE = "function compute(nums)";

/** A predicate on x: its words (after "the numbers x in nums") and its code. */
interface Filter {
  words: string;
  code: string;
  test(x: number): boolean;
}

/** A function of x: its words and its code. */
interface MapFn {
  words: string;
  code: string;
  apply(x: number): number;
}

type Reduce = "sum" | "product" | "maximum" | "minimum" | "count";

const REDUCES: readonly Reduce[] = ["sum", "product", "maximum", "minimum", "count"];

function filters(): Filter[] {
  const out: Filter[] = [
    { words: "", code: "", test: () => true },
    { words: " that are even", code: "x % 2 === 0", test: (x) => x % 2 === 0 },
    { words: " that are odd", code: "x % 2 !== 0", test: (x) => x % 2 !== 0 },
    { words: " that are positive", code: "x > 0", test: (x) => x > 0 },
    { words: " that are negative", code: "x < 0", test: (x) => x < 0 },
  ];
  for (let k = -5; k <= 5; k++) {
    out.push({ words: ` greater than ${k}`, code: `x > ${k}`, test: (x) => x > k });
    out.push({ words: ` less than ${k}`, code: `x < ${k}`, test: (x) => x < k });
    out.push({ words: ` not equal to ${k}`, code: `x !== ${k}`, test: (x) => x !== k });
  }
  return out;
}

function maps(): MapFn[] {
  const out: MapFn[] = [
    { words: "x", code: "x", apply: (x) => x },
    { words: "x squared", code: "x * x", apply: (x) => x * x },
    { words: "minus x", code: "-x", apply: (x) => -x },
    { words: "the absolute value of x", code: "Math.abs(x)", apply: (x) => Math.abs(x) },
  ];
  for (let k = 2; k <= 9; k++) {
    out.push({ words: `x plus ${k}`, code: `x + ${k}`, apply: (x) => x + k });
    out.push({ words: `x times ${k}`, code: `x * ${k}`, apply: (x) => x * k });
  }
  return out;
}

const FILTERS = filters();
const MAPS = maps();

/** The statement, the reference solution and the value of the fold on `nums`. */
export interface Fold {
  reduce: Reduce;
  map: MapFn;
  filter: Filter;
}

export function foldStatement(f: Fold): string {
  if (f.reduce === "count") return `Return how many numbers x in nums${f.filter.words}.`;
  const none = f.reduce === "maximum" || f.reduce === "minimum" ? " (0 if there are none)" : "";
  return `Return the ${f.reduce} of ${f.map.words} over the numbers x in nums${f.filter.words}${none}.`;
}

export function foldSolution(f: Fold): string {
  const guard = f.filter.code ? `if (${f.filter.code}) ` : "";
  const e = f.map.code;
  const loop = (body: string) => `  for (const x of nums) ${guard}${body};\n`;
  const head = `function ${FOLD_FN}(nums) {\n`;
  switch (f.reduce) {
    case "sum":
      return `${head}  let r = 0;\n${loop(`r += ${e}`)}  return r;\n}\n`;
    case "product":
      return `${head}  let r = 1;\n${loop(`r *= ${e}`)}  return r;\n}\n`;
    case "count":
      return `${head}  let r = 0;\n${loop("r += 1")}  return r;\n}\n`;
    case "maximum":
    case "minimum": {
      const m = f.reduce === "maximum" ? "max" : "min";
      return `${head}  let r = null;\n${loop(`r = r === null ? ${e} : Math.${m}(r, ${e})`)}` +
        `  return r === null ? 0 : r;\n}\n`;
    }
  }
}

export function foldValue(f: Fold, nums: readonly number[]): number {
  const ys = nums.filter((x) => f.filter.test(x)).map((x) => f.map.apply(x));
  let r: number;
  switch (f.reduce) {
    case "sum":
      r = ys.reduce((a, y) => a + y, 0);
      break;
    case "product":
      r = ys.reduce((a, y) => a * y, 1);
      break;
    case "count":
      r = ys.length;
      break;
    case "maximum":
      r = ys.length ? Math.max(...ys) : 0;
      break;
    case "minimum":
      r = ys.length ? Math.min(...ys) : 0;
      break;
  }
  return r === 0 ? 0 : r; // -0 reads as 0 in JSON; keep the reference value the same
}

/** Six test arrays: an empty one, a short one, and four of 3–7 numbers in −9..9. */
function testArrays(rng: Rng): number[][] {
  const arr = (n: number) => Array.from({ length: n }, () => rng.int(19) - 9);
  return [[], arr(1), arr(3 + rng.int(2)), arr(4 + rng.int(3)), arr(5 + rng.int(3)), arr(6)];
}

/** Filters and maps in words only (no constant), then those with a constant k. */
const WORD_FILTERS = FILTERS.slice(0, 5), K_FILTERS = FILTERS.slice(5);
const WORD_MAPS = MAPS.slice(0, 4), K_MAPS = MAPS.slice(4);

/**
 * A fold: the reduce uniformly; the filter and the map each half the time from the five (four)
 * in words only and half the time from those with a constant (count ignores the map). Copying a
 * constant from the statement into the code is the hard part for a tiny model, so about a
 * quarter of the problems have none.
 */
export function drawFold(rng: Rng): Fold {
  const reduce = rng.pick(REDUCES);
  const words = rng.int(2) === 0;
  // "count" of every number is nums.length: keep a real filter there.
  const filter = words
    ? (reduce === "count" ? rng.pick(WORD_FILTERS.slice(1)) : rng.pick(WORD_FILTERS))
    : rng.pick(K_FILTERS);
  const map = reduce === "count"
    ? MAPS[0]
    : rng.int(2) === 0
    ? rng.pick(WORD_MAPS)
    : rng.pick(K_MAPS);
  return { reduce, map, filter };
}

export function foldProblem(rng: Rng): CodeProblem {
  const f = drawFold(rng);
  const tests = testArrays(rng).map((nums) => ({
    args: [nums] as Json[],
    expected: foldValue(f, nums) as Json,
  }));
  return {
    id: `fold_${f.reduce}`,
    difficulty: 1,
    fnName: FOLD_FN,
    signature: FOLD_SIGNATURE,
    statement: foldStatement(f),
    solution: foldSolution(f),
    tests,
  };
}

/** How many distinct statements the family has. */
export function foldStatementCount(): number {
  const nonCount = (REDUCES.length - 1) * MAPS.length * FILTERS.length;
  return nonCount + (FILTERS.length - 1);
}

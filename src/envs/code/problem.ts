// The shape of a Code problem (shipped in problems_*.ts or loaded from a user's JSONL file), and
// `tc`, the one-line constructor of a reference test case used by the problem lists.

import type { Json, TestCase } from "./harness.ts";

export interface CodeProblem {
  /** Stable name, e.g. "two_sum". */
  id: string;
  /** 1 easy, 2 medium, 3 hard. */
  difficulty: number;
  /** The function both agents work with; the coder must define it, the tester must call it. */
  fnName: string;
  /** How the function is declared, e.g. "function twoSum(nums, target)". */
  signature: string;
  /** What the function must do, edge cases included: the tester writes tests from this alone. */
  statement: string;
  /** Reference solution (JavaScript source defining `fnName`). */
  solution: string;
  /** Reference tests (hidden from both agents): normal and edge cases. */
  tests: TestCase[];
}

export function tc(args: Json[], expected: Json): TestCase {
  return { args, expected };
}

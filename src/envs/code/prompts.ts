// What the coder and the tester see. Both read only turn-start fields (never `pending`), so in a
// parallel turn neither sees the other's current message; from turn 2 each sees its own previous
// output, the other's latest output, and how that code did on those tests. Hidden reference tests
// and the reference solution's verdicts on the tests never appear.

import { buildPrompt } from "../prompt.ts";
import type { Prompt, PromptStyle } from "../types.ts";
import type { CodeOutput, CodeState, TestsOutput } from "./env.ts";

const SYSTEM_CODER =
  `You are the coder of a two-agent team; a tester writes unit tests for the same problem in
parallel. Write the requested JavaScript function exactly as specified (plain JavaScript: no
imports, exports or input reading), in one \`\`\`javascript block; helper functions are fine. Your
reward is the share of hidden reference tests your function passes. The episode ends when your
function passes all of the tester's tests. From the second turn on you see your previous code, the
tester's tests and how your code did on them: fix your code, keeping in mind that a test can be
wrong too.`;

const SYSTEM_TESTER =
  `You are the tester of a two-agent team; a coder writes the function for the same problem in
parallel. Write unit tests as JavaScript statements, one check per statement:
assertEqual(actual, expected) compares by content (arrays, objects), assert(condition, message)
checks a condition. Every test must call the function; do not define the function yourself. Cover
normal and edge cases (empty inputs, zero, negatives, ties). Your reward is the share of your
tests that a correct solution passes, plus the coder's success: a test with a wrong expected value
counts against you. Put the tests in one \`\`\`javascript block. From the second turn on you see
your previous tests, the coder's latest code and its results on your tests: when the code fails a
test, decide whether the code or the test is wrong, and fix your tests.`;

/** Longest code excerpt in a compact prompt: tiny models have short contexts. */
const COMPACT_CODE = 300;

function clip(s: string, n: number): string {
  return s.length > n ? s.slice(0, n) + "…" : s;
}

function block(code: string | null): string {
  return code === null ? "(no code)\n" : "```javascript\n" + code.trimEnd() + "\n```\n";
}

function results(code: CodeOutput | null, tests: TestsOutput | null): string {
  if (code === null || code.code === null) return "There was no code to run.";
  if (tests === null || !tests.runnable) return "There were no tests to run it on.";
  const g = code.onTests!;
  const n = g.pass.filter(Boolean).length;
  const fails = g.failures.length
    ? `\nFailures:\n${g.failures.map((f) => `- ${f}`).join("\n")}`
    : "";
  const printed = code.output ? `\nIt printed: ${code.output}` : "";
  return `On the tests: ${n} of ${g.pass.length} passed.${fails}${printed}`;
}

function score(code: CodeOutput | null): string {
  const g = code?.onTests;
  return g ? `${g.pass.filter(Boolean).length}/${g.pass.length}` : "-";
}

function observeCoder(s: CodeState, style: PromptStyle, head: string): Prompt {
  const t = s.task;
  let past = "\nWrite the function.";
  let compactPast = "";
  if (s.turn > 0) {
    const testsText = s.tests?.code
      ? block(s.tests.code)
      : `(none: ${s.tests?.problem ?? "no tests"})\n`;
    past =
      `\nYour previous code:\n${block(s.code?.code ?? null)}The tester's tests:\n${testsText}` +
      `${results(s.code, s.tests)}\nRevise your code.`;
    compactPast = `prev:\n${clip(s.code?.code ?? "", COMPACT_CODE)}\ntests:\n` +
      `${clip(s.tests?.code ?? "", COMPACT_CODE)}\nres:${score(s.code)}\n`;
  }
  return buildPrompt(style, {
    system: SYSTEM_CODER,
    user: `${head}\nProblem: ${t.statement}\nSignature: ${t.signature}${past}`,
    compact: `code coder t${s.turn + 1}\n${t.statement}\n${t.signature}\n${compactPast}js:\n`,
  });
}

function observeTester(s: CodeState, style: PromptStyle, head: string): Prompt {
  const t = s.task;
  let past = "\nWrite the tests.";
  let compactPast = "";
  if (s.turn > 0) {
    const mine = s.tests?.code
      ? block(s.tests.code)
      : `(none: ${s.tests?.problem ?? "no tests"})\n`;
    const note = s.tests?.problem ? `Note: ${s.tests.problem}\n` : "";
    past =
      `\nYour previous tests:\n${mine}${note}The coder's latest code:\n${
        block(s.code?.code ?? null)
      }` +
      `${results(s.code, s.tests)}\nRevise your tests.`;
    compactPast = `prev:\n${clip(s.tests?.code ?? "", COMPACT_CODE)}\ncode:\n` +
      `${clip(s.code?.code ?? "", COMPACT_CODE)}\nres:${score(s.code)}\n`;
  }
  return buildPrompt(style, {
    system: SYSTEM_TESTER,
    user: `${head}\nProblem: ${t.statement}\nFunction under test: ${t.signature}${past}`,
    compact: `code tester t${s.turn + 1}\n${t.statement}\n${t.signature}\n${compactPast}js:\n`,
  });
}

export function observe(s: CodeState, agent: string, style: PromptStyle): Prompt {
  const head = `Turn ${s.turn + 1} of ${s.task.maxTurns}.`;
  return agent === "coder" ? observeCoder(s, style, head) : observeTester(s, style, head);
}

// The exit-code table (EXIT_CODES in src/cli/cli_args.ts: 0 ok, 1 failure while running, 2 bad
// input) on the commands: token ids outside the model's vocabulary, too few ids to score, and
// named input errors mapped to 2.

import { assert, assertEquals } from "../assert.ts";
import { exitCodeFor } from "../../src/cli/cli_args.ts";
import { ConfigError } from "../../src/rl/config.ts";
import { RunDirLockedError } from "../../src/rl/run_lock.ts";
import { CheckpointNotFoundError } from "../../src/train/errors.ts";

async function cli(
  file: string,
  args: string[],
): Promise<{ code: number; text: string; stdout: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", file, ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const dec = new TextDecoder();
  const stdout = dec.decode(out.stdout);
  return { code: out.code, text: stdout + dec.decode(out.stderr), stdout };
}

Deno.test("exit codes: bad input is 2, anything else 1", () => {
  assertEquals(exitCodeFor(ConfigError.at("run.steps", "must be ≥ 1")), 2);
  assertEquals(exitCodeFor(new RunDirLockedError("runs/x", null)), 2);
  assertEquals(exitCodeFor(new CheckpointNotFoundError("runs/x", "holds no checkpoint")), 2);
  assertEquals(exitCodeFor(new Deno.errors.NotFound("no such file")), 2);
  assertEquals(exitCodeFor(new Error("device lost")), 1);
  assertEquals(exitCodeFor("a string"), 1);
});

Deno.test("exit codes: generate and logprobs refuse ids outside the vocabulary, logprobs one id (exit 2)", async () => {
  const model = "models/plan_path_tiny";
  for (
    const [file, args] of [
      ["src/cli/generate.ts", ["--model", model, "--ids", "1,4000000000", "--max-new-tokens", "1"]],
      ["src/cli/logprobs.ts", ["--model", model, "--ids", "1,4000000000"]],
      ["src/cli/logprobs.ts", ["--model", model, "--ids", "1"]],
    ] as const
  ) {
    const r = await cli(file, [...args]);
    assertEquals(r.code, 2, `${file} ${args.join(" ")}: ${r.text}`);
    assert(r.text.includes("UsageError"), r.text);
  }
  const ok = await cli("src/cli/logprobs.ts", ["--model", model, "--ids", "1,2", "--json"]);
  assertEquals(ok.code, 0, ok.text);
  // stdout's last line (the GPU stack may add lines such as an XDG_RUNTIME_DIR warning on stderr)
  assertEquals(JSON.parse(ok.stdout.trim().split("\n").at(-1)!).logprobs.length, 1);
});

Deno.test("exit codes: bench --only with an unknown section is a usage error naming the sections (exit 2); --help exits 0", async () => {
  const bad = await cli("test/bench/main.ts", ["--only", "nonsense"]);
  assertEquals(bad.code, 2, bad.text);
  assert(bad.text.includes("--only nonsense: no section named nonsense"), bad.text);
  assert(bad.text.includes("matmul, inference, train, rl, sandbox, scale"), bad.text);
  const mixed = await cli("test/bench/main.ts", ["--only", "rl,bogus", "--quick"]);
  assertEquals(mixed.code, 2, mixed.text);
  assert(mixed.text.includes("no section named bogus"), mixed.text);
  const help = await cli("test/bench/main.ts", ["--help"]);
  assertEquals(help.code, 0, help.text);
  assert(
    help.text.startsWith(
      "usage: npx deno task bench [--lab] [--variants REGEX] [--model-shapes] [--half] [--quick] [--shapes NAMES] [--half-base] [--profile] [--long-context TOKENS] [--only matmul,inference,train,rl,sandbox,scale]",
    ),
    help.text,
  );
  // The lab's selectors need the lab; a bad regular expression is named.
  const noLab = await cli("test/bench/main.ts", ["--only", "matmul", "--model-shapes"]);
  assertEquals(noLab.code, 2, noLab.text);
  assert(noLab.text.includes("add --lab"), noLab.text);
  const halfNoLab = await cli("test/bench/main.ts", ["--only", "matmul", "--half"]);
  assertEquals(halfNoLab.code, 2, halfNoLab.text);
  assert(halfNoLab.text.includes("add --lab"), halfNoLab.text);
  const badLong = await cli("test/bench/main.ts", ["--only", "scale", "--long-context", "2k"]);
  assertEquals(badLong.code, 2, badLong.text);
  assert(badLong.text.includes("--long-context 2k: a positive whole number"), badLong.text);
  const badRe = await cli("test/bench/main.ts", ["--lab", "--variants", "(sm"]);
  assertEquals(badRe.code, 2, badRe.text);
  assert(badRe.text.includes("--variants (sm: not a regular expression"), badRe.text);
});

Deno.test("exit codes: demo honours --help (exit 0) and refuses unknown flags (exit 2) before touching the GPU", async () => {
  const help = await cli("src/cli/demo.ts", ["--help"]);
  assertEquals(help.code, 0, help.text);
  assert(help.text.startsWith("usage: npx deno task demo\n"), help.text);
  assert(!help.text.includes("adapter:"), help.text);
  for (const args of [["--bogus"], ["extra"]]) {
    const bad = await cli("src/cli/demo.ts", args);
    assertEquals(bad.code, 2, `${args}: ${bad.text}`);
    assert(bad.text.includes("usage: npx deno task demo"), bad.text);
    assert(!bad.text.includes("adapter:"), bad.text);
  }
});

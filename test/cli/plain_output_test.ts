// Output that goes to a pipe or a file is plain text: the commands' usage, errors and results
// carry no ANSI escape codes even without NO_COLOR (what Deno itself colours regardless, the
// `deno task` "Task ..." line and its uncaught-error report, is kept out of our paths: every
// command reports errors through runMain, one plain line).

import { assert, assertEquals } from "../assert.ts";

const repo = new URL("../../", import.meta.url).pathname;
const ESC = "\x1b[";

/** The environment without NO_COLOR (npm test sets it for the whole suite). */
function colourEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  delete env.NO_COLOR;
  return env;
}

async function piped(args: string[]): Promise<{ code: number; text: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: repo,
    clearEnv: true,
    env: colourEnv(),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test("plain output: the commands' usage, usage errors, failures and results have no colour codes when piped", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "plain_output_" });
  try {
    await Deno.writeTextFile(`${tmp}/throws.js`, `console.log({ a: 1 }); throw new Error("bad");`);
    const cases: [string[], number][] = [
      [["run", "-A", "src/cli/train.ts", "--help"], 0],
      [["run", "-A", "src/cli/train.ts", "--bogus"], 2],
      [["run", "-A", "src/cli/train.ts", "--config", `${tmp}/missing.json`], 2],
      [["run", "-A", "src/cli/exec_js.ts", `${tmp}/throws.js`], 1],
      [["run", "-A", "src/cli/exec_js.ts", `${tmp}/throws.js`, "--json"], 1],
      [[
        "run",
        "-A",
        "src/cli/logprobs.ts",
        "--model",
        "models/plan_path_tiny",
        "--ids",
        "1,2",
        "--json",
      ], 0],
      [["run", "-A", "src/cli/experiment.ts"], 2],
      [["run", "-A", "src/cli/demo.ts", "--bogus"], 2],
      [["run", "-A", "test/bench/main.ts", "--only", "nonsense"], 2],
    ];
    for (const [args, code] of cases) {
      const r = await piped(args);
      assertEquals(r.code, code, `${args.join(" ")}:\n${r.text}`);
      assert(
        !r.text.includes(ESC),
        `${args.join(" ")} printed colour codes:\n${JSON.stringify(r.text)}`,
      );
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("plain output: an error escaping a command would be Deno's coloured report; every entry point uses runMain", async () => {
  // the premise: Deno colours an uncaught error even into a pipe
  const bare = await piped(["eval", "throw new Error('x')"]);
  assert(bare.text.includes(ESC), JSON.stringify(bare.text));
  for (
    const f of [...Deno.readDirSync(`${repo}src/cli`)].map((e) => `src/cli/${e.name}`).concat(
      "test/bench/main.ts",
    )
  ) {
    const src = Deno.readTextFileSync(`${repo}${f}`);
    if (!src.includes("parseArgsOrExit(")) continue; // not an entry point
    assert(
      src.includes("runMain("),
      `${f}: errors would reach the user as Deno's coloured uncaught-error report`,
    );
  }
});

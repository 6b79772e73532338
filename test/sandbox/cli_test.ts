// `deno task exec-js`: spawned for real; checks the JSON line, exit codes and usage errors.

import { assert, assertEquals } from "../assert.ts";

const CLI = new URL("../../src/cli/exec_js.ts", import.meta.url).pathname;

async function execJs(
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, ...args],
    stdin: "null",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

function lastJson(stdout: string): Record<string, unknown> {
  return JSON.parse(stdout.trim().split("\n").pop()!);
}

Deno.test("exec-js: runs a file like the environments do; --json prints the result line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "exec-js-" });
  try {
    await Deno.writeTextFile(`${dir}/ok.js`, "print(grid.length, typeof fetch);");
    await Deno.writeTextFile(`${dir}/globals.json`, JSON.stringify({ grid: [[1], [2], [3]] }));
    await Deno.writeTextFile(`${dir}/loop.js`, "print('started'); while (true) {}");
    const [plain, json, loop] = await Promise.all([
      execJs(`${dir}/ok.js`, "--globals", `${dir}/globals.json`),
      execJs("--json", `${dir}/ok.js`, "--globals", `${dir}/globals.json`),
      execJs(`${dir}/loop.js`, "--timeout-ms", "1500", "--json"),
    ]);
    assertEquals([plain.code, plain.stdout], [0, "3 undefined\n"]);
    assertEquals(json.code, 0);
    const r = lastJson(json.stdout);
    assertEquals(Object.keys(r), ["ok", "stdout", "error", "timedOut", "ms"]);
    assertEquals([r.ok, r.stdout, r.error, r.timedOut], [true, "3 undefined\n", null, false]);
    assert(typeof r.ms === "number" && r.ms > 0, "ms must be a positive number");
    assertEquals(loop.code, 1, "a timed-out run exits 1");
    const t = lastJson(loop.stdout);
    assertEquals([t.ok, t.stdout, t.timedOut], [false, "started\n", true]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("exec-js: bad arguments print the usage and exit 2; --help exits 0", async () => {
  const cases = await Promise.all([
    execJs(),
    execJs("a.js", "b.js"),
    execJs("a.js", "--timeout-ms", "abc"),
    execJs("a.js", "--timeout-ms"),
    execJs("a.js", "--bogus"),
    execJs("/definitely/not/here.js"),
  ]);
  for (const c of cases) {
    assertEquals(c.code, 2, c.stderr);
    assert(c.stderr.includes("usage: npx deno task exec-js FILE"), `usage missing: ${c.stderr}`);
  }
  const help = await execJs("--help");
  assertEquals(help.code, 0);
  assert(help.stdout.includes("--timeout-ms N") && help.stdout.includes("--json"), help.stdout);
});

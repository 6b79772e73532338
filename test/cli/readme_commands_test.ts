// The README's commands as a newcomer types them right after `npm install`, with no Deno on the
// PATH: every command in its Commands table answers `--help` with exit 0 from the repository root
// (`npx deno task X --help`, `npm start -- --help`, ...), its usage names every flag the table
// shows, and the docs and the CLIs' usage lines never say a bare `deno task` (exit 127 on a fresh
// machine).

import { assert, assertEquals } from "../assert.ts";

const repo = new URL("../../", import.meta.url).pathname;
const dec = new TextDecoder();

/** The backticked commands of the README's Commands table (first column), in order. */
export function readmeCommands(readme: string): string[] {
  const start = readme.indexOf("\n## Commands\n");
  assert(start >= 0, "README has no '## Commands' section");
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const out: string[] = [];
  for (const line of section.split("\n")) {
    if (!line.startsWith("| `")) continue;
    const first = line.slice(2).split(" | ")[0];
    for (const m of first.matchAll(/`([^`]+)`/g)) out.push(m[1]);
  }
  return out;
}

/** The argv that asks `command` (as the README writes it) for its usage. */
export function helpArgv(command: string): { argv: string[]; usagePrefix: string | null } {
  const words = command.split(/\s+/);
  if (command.startsWith("npx deno task ")) {
    const names: string[] = [];
    for (const w of words.slice(3)) {
      if (!/^[a-z][a-z0-9-]*$/.test(w)) break;
      names.push(w);
    }
    return {
      argv: ["npx", "deno", "task", ...names, "--help"],
      usagePrefix: `usage: npx deno task ${names.join(" ")}`,
    };
  }
  if (command.startsWith("npm ")) return { argv: [...words, "--", "--help"], usagePrefix: null };
  throw new Error(`README command "${command}" is neither "npx deno task ..." nor "npm ..."`);
}

/** PATH without any directory that holds a `deno`, as on a machine that only ran `npm install`. */
function pathWithoutDeno(): string {
  return (Deno.env.get("PATH") ?? "").split(":").filter((dir) => {
    if (dir === "") return false;
    try {
      Deno.statSync(`${dir}/deno`);
      return false;
    } catch {
      return true;
    }
  }).join(":");
}

Deno.test("README commands: the table's commands are all npx deno task or npm", () => {
  const cmds = readmeCommands(Deno.readTextFileSync(`${repo}README.md`));
  assert(cmds.length >= 15, `only ${cmds.length} commands found`);
  for (const c of cmds) helpArgv(c); // throws on any other form
  assert(cmds.includes("npm start") && cmds.some((c) => c.startsWith("npx deno task train")));
});

Deno.test({
  name:
    "README commands: each one's --help works as written, from the repository root, with no deno on PATH",
  // `npm test -- --help` must not run the suite (which holds this test); never recurse if it does
  ignore: Deno.env.get("PETTINGLLMS_README_HELP_TEST") === "1",
  sanitizeResources: false,
  fn: async () => {
    const env = {
      ...Deno.env.toObject(),
      PATH: pathWithoutDeno(),
      PETTINGLLMS_README_HELP_TEST: "1",
    };
    // the premise: no `deno` to be found on this PATH
    const bare = await new Deno.Command("sh", {
      args: ["-c", "command -v deno"],
      env,
      stdout: "piped",
    }).output();
    assert(bare.code !== 0, `deno still on PATH: ${dec.decode(bare.stdout)}`);
    const seen = new Set<string>();
    for (const command of readmeCommands(Deno.readTextFileSync(`${repo}README.md`))) {
      const { argv, usagePrefix } = helpArgv(command);
      const key = argv.join(" ");
      if (seen.has(key)) continue; // train appears twice (--config, --resume)
      seen.add(key);
      const signal = AbortSignal.timeout(60_000); // a --help that starts the real job is a failure
      const out = await new Deno.Command(argv[0], {
        args: argv.slice(1),
        cwd: repo,
        env,
        stdout: "piped",
        stderr: "piped",
        signal,
      }).output();
      const stdout = dec.decode(out.stdout), stderr = dec.decode(out.stderr);
      assertEquals(out.code, 0, `${key}: exit ${out.code}\n${stdout}\n${stderr}`);
      if (usagePrefix) {
        assert(stdout.includes(usagePrefix), `${key}: no "${usagePrefix}" in\n${stdout}`);
        // every flag the README shows for this row is in the usage text
        for (const m of command.matchAll(/--[a-z][a-z0-9-]*/g)) {
          assert(
            stdout.includes(m[0]),
            `${key}: the README shows ${m[0]}, the usage does not:\n${stdout}`,
          );
        }
      }
    }
  },
});

Deno.test("README commands: docs and usage lines never tell a newcomer to run a bare `deno task`", () => {
  const files = ["README.md"];
  const add = (dir: string, pick: (name: string) => boolean, depth = 2) => {
    for (const e of Deno.readDirSync(`${repo}${dir}`)) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory && depth > 0) add(p, pick, depth - 1);
      else if (e.isFile && pick(e.name)) files.push(p);
    }
  };
  add("docs", (n) => n.endsWith(".md"));
  add("configs", (n) => n === "README.md");
  add("models", (n) => n === "README.md");
  add("src", (n) => n.endsWith(".ts"), 4);
  const bad: string[] = [];
  for (const f of files) {
    Deno.readTextFileSync(`${repo}${f}`).split("\n").forEach((line, i) => {
      // a comment may name Deno's own `deno task` wrapper; user-facing text may not
      if (f.endsWith(".ts") && /^\s*(\/\/|\*|\/\*\*)/.test(line)) return;
      if (/(?<!npx )(?<![\w\/.-])deno task [a-z]/.test(line)) {
        bad.push(`${f}:${i + 1}: ${line.trim()}`);
      }
    });
  }
  assertEquals(
    bad,
    [],
    `say "npx deno task" (no deno on PATH after npm install):\n${bad.join("\n")}`,
  );
});

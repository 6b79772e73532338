// The code stays formatted, linted and type-checked, over src/, test/ and web/: `deno fmt
// --check`, `deno lint` and `deno check web/` run here (deno test type-checks src/ and test/
// itself, every test module with what it imports). A failure names the files; `npx deno fmt`
// fixes formatting.

import { assertEquals } from "../assert.ts";

const repo = new URL("../../", import.meta.url).pathname;
const dec = new TextDecoder();

async function deno(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: repo,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test("deno fmt --check: src/, test/ and web/ are formatted (fix: npx deno fmt src/ test/ web/)", async () => {
  const r = await deno("fmt", "--check", "src/", "test/", "web/");
  assertEquals(
    r.code,
    0,
    r.text.split("\n").filter((l) => l.startsWith("from ") || l.startsWith("error")).join("\n"),
  );
});

Deno.test("deno lint: src/, test/ and web/ are clean", async () => {
  const r = await deno("lint");
  assertEquals(r.code, 0, r.text);
});

Deno.test("deno check web/: the browser app type-checks with the rest", async () => {
  const r = await deno("check", "web/");
  assertEquals(r.code, 0, r.text);
});

#!/usr/bin/env node
// `npm test`: the whole suite — Deno's tests and the browser tests in Chromium, side by side — and one
// closing line "N passed, N failed" over both (Deno's steps count as tests).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(
    'usage: npm test\n\nThe whole suite: Deno\'s tests and the browser tests in headless Chromium, side by side;\nends with "N passed, N failed" (exit 1 if any failed). It takes no flags.',
  );
  process.exit(0);
}
if (process.argv.length > 2) {
  console.error(
    `error: unexpected argument "${
      process.argv[2]
    }"\n\nusage: npm test   (takes no flags; npm test -- --help)`,
  );
  process.exit(2);
}

const repo = fileURLToPath(new URL("..", import.meta.url));
const deno = existsSync(`${repo}/node_modules/.bin/deno`)
  ? `${repo}/node_modules/.bin/deno`
  : "deno";

// Both suites run at once, their lines streamed with a "[suite] " prefix: much of the browser
// suite waits on single-threaded shader compilation in Chromium, which leaves a core to Deno's.
function run(name, cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: repo, env: { ...process.env, NO_COLOR: "1" } });
    let out = "";
    const pipe = (src, dst) => {
      let partial = "";
      src.on("data", (d) => {
        out += d;
        const lines = (partial + d).split("\n");
        partial = lines.pop();
        for (const l of lines) dst.write(`[${name}] ${l}\n`);
      });
      src.on("end", () => partial && dst.write(`[${name}] ${partial}\n`));
    };
    pipe(child.stdout, process.stdout);
    pipe(child.stderr, process.stderr);
    child.on("close", (code, signal) => resolve({ code: code ?? 1, signal, out }));
  });
}

// Deno: "ok | 6 passed (536 steps) | 0 failed" or "FAILED | 5 passed (530 steps) | 1 failed (6 steps)".
function denoCounts(out) {
  const m =
    /(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed(?: \((\d+) steps?\))?/
      .exec(out);
  if (!m) return null;
  return { passed: Number(m[1]) + Number(m[2] ?? 0), failed: Number(m[3]) + Number(m[4] ?? 0) };
}

// node --test: "# pass N" / "# fail N" (subtests included).
function nodeCounts(out) {
  const p = /^# pass (\d+)/m.exec(out), f = /^# fail (\d+)/m.exec(out);
  if (!p || !f) return null;
  return { passed: Number(p[1]), failed: Number(f[1]) };
}

const suites = [
  { name: "deno", cmd: deno, args: ["task", "test"], counts: denoCounts },
  {
    name: "browser",
    cmd: process.execPath,
    args: ["--test", "--test-reporter=tap", "test/e2e/"],
    counts: nodeCounts,
  },
];

const t0 = Date.now();
const results = await Promise.all(suites.map(async (s) => {
  const r = await run(s.name, s.cmd, s.args);
  console.log(
    `=== ${s.name} tests ended after ${
      ((Date.now() - t0) / 1000).toFixed(0)
    } s (exit ${r.code}) ===`,
  );
  return r;
}));

// The failed tests' names (and, for node's TAP, the first lines of each failure's details),
// repeated after both suites: CI keeps the tail of the output, where the streamed failures of the
// suite that ended first would otherwise be out of sight.
function failures(name, out) {
  const lines = out.split("\n"), found = [];
  lines.forEach((l, i) => {
    if (name === "browser" && /^\s*not ok \d+ - /.test(l)) {
      const yaml = [];
      for (let j = i + 1; j < lines.length && yaml.length < 8; j++) {
        if (/^\s*(ok|not ok) \d+ - /.test(lines[j]) || /^\s*\.\.\.$/.test(lines[j])) break;
        if (!/^\s*(error|location|failureType|code|duration_ms):/.test(lines[j])) continue;
        // A multi-line value ("error: |-") continues on the next line.
        const more = /:\s*\|-?$/.test(lines[j]) && j + 1 < lines.length
          ? ` ${lines[j + 1].trim()}`
          : "";
        yaml.push(lines[j].trim() + more);
      }
      found.push(`${l.trim()}${yaml.length ? ` (${yaml.join("; ").slice(0, 600)})` : ""}`);
    }
    if (name === "deno" && /\.\.\. FAILED/.test(l)) found.push(l.trim());
  });
  return name === "deno" ? [...found, ...denoErrors(lines)] : found;
}

// Deno's " ERRORS " section: "<test name> => <file>:<line>:<col>", then "error: ..." and its
// stack. Each error's message without its stack lines, its first 12 and last 30 lines (a
// spawned command's output, which a message often ends with, says most at its end).
function denoErrors(lines) {
  const start = lines.findIndex((l) => l.trim() === "ERRORS");
  if (start < 0) return [];
  const out = [];
  let cur = null;
  for (const l of lines.slice(start + 1)) {
    if (l.trim() === "FAILURES") break;
    if (/ => \S+:\d+:\d+$/.test(l)) {
      cur = { head: l.trim(), body: [] };
      out.push(cur);
    } else if (cur && !/^\s+at /.test(l)) cur.body.push(l);
  }
  return out.map(({ head, body }) => {
    while (body.length && !body[body.length - 1].trim()) body.pop();
    const shown = body.length > 42
      ? [...body.slice(0, 12), `... (${body.length - 42} lines left out) ...`, ...body.slice(-30)]
      : body;
    return `${head}\n${shown.map((l) => `    ${l.slice(0, 300)}`).join("\n")}`;
  });
}

let passed = 0, failed = 0, exit = 0;
for (const [i, s] of suites.entries()) {
  const r = results[i];
  const c = s.counts(r.out);
  if (!c) {
    console.log(`[${s.name}] no test summary found (exit ${r.code}): counted as 1 failure`);
    failed += 1;
  } else {
    for (const f of c.failed > 0 ? failures(s.name, r.out) : []) {
      console.log(`[${s.name}] failed: ${f.replaceAll("\n", `\n[${s.name}] `)}`);
    }
    console.log(`[${s.name}] ${c.passed} passed, ${c.failed} failed`);
    passed += c.passed;
    failed += c.failed;
  }
  if (r.code !== 0) {
    // Deno's WebGPU on llvmpipe has aborted at process exit (heap corruption reported by glibc
    // in the driver's teardown) after printing a complete summary: every test had run and
    // reported. That is counted by the summary, not as a failure; any other exit status is.
    // `deno task` reports its child's abort as status 128 + 6 (SIGABRT) or 128 + 11 (SIGSEGV).
    const crashed = r.signal ?? ({ 134: "SIGABRT", 139: "SIGSEGV" })[r.code];
    if (crashed && c && c.failed === 0) {
      console.log(
        `[${s.name}] the process ended by ${crashed} after its complete summary (${c.passed} passed, 0 failed): a crash at exit, not a test`,
      );
    } else exit = 1;
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : exit);

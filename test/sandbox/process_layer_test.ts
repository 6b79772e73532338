// The Deno host's second layer on its own: a script run with exactly the sandbox's command
// line and environment, but without the guest's stripping (Deno and node: modules intact),
// must still be denied the network, files, environment, subprocesses, GPU and the host.

import { assert } from "../assert.ts";
import { sandboxDenoArgs, sandboxEnv } from "../../src/sandbox/host_deno.ts";
import { exists, makeBait } from "./bait.ts";

function probeScript(
  b: {
    secretFile: string;
    probeUrl: string;
    secretEnv: string;
    markerFile: string;
    localModule: string;
  },
): string {
  const v = JSON.stringify;
  return `
const out = {};
async function t(name, fn) {
  try { const r = await fn(); out[name] = "LEAK:" + String(r).slice(0, 60); }
  catch (e) { out[name] = "blocked:" + (e && e.name); }
}
const none = (x) => x ?? Promise.reject(new Error("nothing"));
await t("read file", () => Deno.readTextFile(${v(b.secretFile)}));
await t("write file", () => Deno.writeTextFile(${v(b.markerFile)}, "x"));
await t("fetch", async () => (await fetch(${v(b.probeUrl)})).status);
await t("listen", () => Deno.listen({ port: 0 }));
await t("env", () => none(Deno.env.get(${v(b.secretEnv)})));
await t("env object", () => JSON.stringify(Deno.env.toObject()));
await t("process.env", () => none(process.env[${v(b.secretEnv)}]));
await t("subprocess", () => new Deno.Command("sh", { args: ["-c", "touch " + ${
    v(b.markerFile)
  }] }).output());
await t("kill host", () => Deno.kill(${Deno.pid}, "SIGCONT"));
await t("sys", () => Deno.hostname());
await t("ffi", () => Deno.dlopen("libc.so.6", {}));
await t("import local", () => import(${v(b.localModule)}));
await t("import remote", () => import(${v(b.probeUrl + "mod.js")}));
await t("node:fs", () => import("node:fs"));
await t("node:process", () => import("node:process"));
await t("worker_threads", () => import("worker_threads"));
await t("gpu", async () => none(await navigator.gpu.requestAdapter()));
console.log(JSON.stringify(out));
`;
}

Deno.test("sandbox process layer: the deno command line alone denies every capability", async () => {
  const bait = await makeBait();
  try {
    const script = `${bait.dir}/probe.js`;
    await Deno.writeTextFile(script, probeScript(bait));
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: sandboxDenoArgs(128, script),
      clearEnv: true,
      env: sandboxEnv(),
      stdin: "null",
    }).output();
    const text = new TextDecoder().decode(stdout);
    assert(code === 0, `probe failed (${code}): ${new TextDecoder().decode(stderr)}`);
    const results = JSON.parse(text) as Record<string, string>;
    assert(Object.keys(results).length === 17, `every probe must run: ${text}`);
    const leaks = Object.entries(results).filter(([, r]) => !r.startsWith("blocked:"));
    assert(leaks.length === 0, `capabilities reached: ${JSON.stringify(leaks)}`);
    assert(!text.includes(bait.secret), "the secret leaked");
    assert(bait.hits() === 0, `the probe server was reached ${bait.hits()} time(s)`);
    assert(!exists(bait.markerFile), "the marker file was created");
  } finally {
    await bait.close();
  }
});

Deno.test("sandbox process layer: the environment is emptied apart from Deno's cache location", () => {
  const env = sandboxEnv();
  const allowed = new Set([
    "DENO_DIR",
    "HOME",
    "XDG_CACHE_HOME",
    "DENO_WEBGPU_BACKEND",
    "DENO_NO_UPDATE_CHECK",
    "NO_COLOR",
  ]);
  for (const k of Object.keys(env)) {
    assert(allowed.has(k), `unexpected variable ${k} passed to the sandbox`);
  }
  assert(env.DENO_WEBGPU_BACKEND === "none", "WebGPU must have no backend in the sandbox");
  const args = sandboxDenoArgs(64, "/x.js");
  assert(
    !args.some((a) => a.startsWith("--allow") || a === "-A"),
    `no permission flag: ${args.join(" ")}`,
  );
  assert(
    args.includes("--v8-flags=--max-old-space-size=64"),
    "the heap limit must be passed to V8",
  );
});

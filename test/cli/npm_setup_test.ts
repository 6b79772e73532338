// What `npm install` works from: package-lock.json complete for every platform (the Deno binary
// comes from one of the `deno` package's optional @deno/* packages, so a lock without the other
// platforms' entries gives a macOS or arm64 machine no Deno, and npm rewrites the tracked lock),
// every install script reviewed in package.json's allowScripts (onnxruntime-node's, which only
// downloads CUDA binaries, denied), and a .npmrc npm accepts without a warning.

import { assert, assertEquals } from "../assert.ts";

const repo = new URL("../../", import.meta.url).pathname;

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  hasInstallScript?: boolean;
  optionalDependencies?: Record<string, string>;
}
const lock = JSON.parse(Deno.readTextFileSync(`${repo}package-lock.json`)) as {
  packages: Record<string, LockEntry>;
};
const pkg = JSON.parse(Deno.readTextFileSync(`${repo}package.json`)) as {
  allowScripts?: Record<string, boolean>;
};

Deno.test("npm set-up: package-lock.json lists every platform's Deno binary with its URL and integrity", () => {
  const deno = lock.packages["node_modules/deno"];
  const platforms = Object.entries(deno.optionalDependencies ?? {});
  assert(platforms.length >= 6, `deno's optional platform packages: ${platforms.map(([n]) => n)}`);
  for (const os of ["darwin", "linux", "win32"]) {
    assert(platforms.some(([n]) => n.startsWith(`@deno/${os}-`)), os);
  }
  for (const [name, version] of platforms) {
    const e = lock.packages[`node_modules/${name}`];
    assert(e, `${name} is missing from package-lock.json`);
    assertEquals(e.version, version, name);
    assertEquals(
      e.resolved,
      `https://registry.npmjs.org/${name}/-/${name.split("/")[1]}-${version}.tgz`,
      name,
    );
    assert(e.integrity?.startsWith("sha512-"), `${name}: no integrity`);
  }
  // and every other registry package, so npm has nothing to add to the tracked file
  const bare = Object.entries(lock.packages).filter(([k, e]) =>
    k !== "" && !e.link && !(e.resolved && e.integrity)
  );
  assertEquals(bare.map(([k]) => k), []);
});

Deno.test("npm set-up: every dependency's install script is reviewed in allowScripts; onnxruntime-node's is denied", () => {
  const allow = pkg.allowScripts ?? {};
  const withScripts = Object.entries(lock.packages).filter(([k, e]) =>
    k !== "" && e.hasInstallScript
  )
    .map(([k]) => k.slice(k.lastIndexOf("node_modules/") + "node_modules/".length));
  assert(withScripts.includes("deno"), String(withScripts));
  for (const name of withScripts) {
    assert(name in allow, `${name} has an install script that allowScripts does not cover`);
  }
  assertEquals(allow["deno"], true, "deno's postinstall links the platform binary");
  assertEquals(allow["onnxruntime-node"], false, "its postinstall only downloads CUDA binaries");
});

Deno.test("npm set-up: npm reads .npmrc and package.json without a warning", async () => {
  const out = await new Deno.Command("npm", {
    args: ["config", "ls"],
    cwd: repo,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  assertEquals(out.code, 0, err);
  assert(!/warn/i.test(err), err);
});

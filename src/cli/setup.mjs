#!/usr/bin/env node
// Runs after `npm install`: makes sure this machine can run WebGPU headless.
// Deno (from the npm package "deno") needs a Vulkan driver: on a machine with no GPU that is
// Mesa's llvmpipe (Debian/Ubuntu package mesa-vulkan-drivers). The browser tests need Chromium.
// As root on Debian/Ubuntu this installs what is missing with apt-get; elsewhere it prints the
// exact command to run. A machine with a GPU and its driver needs none of it.
// Set PETTINGLLMS_SKIP_SETUP=1 to skip.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const say = (s) => console.log(`[setup] ${s}`);

function denoBin() {
  const local = `${repo}/node_modules/.bin/deno`;
  return existsSync(local) ? local : "deno";
}

function probeAdapter() {
  const code =
    `const a = await navigator.gpu?.requestAdapter(); console.log(a ? "adapter:" + (a.info?.description || a.info?.vendor || "unnamed") : "none");`;
  const r = spawnSync(denoBin(), ["eval", code], { encoding: "utf8", timeout: 60_000 });
  const line = (r.stdout || "").trim().split("\n").pop() || "";
  return line.startsWith("adapter:") ? line.slice(8) : null;
}

function hasVulkanIcd() {
  for (const dir of ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"]) {
    if (existsSync(dir) && readdirSync(dir).some((f) => f.endsWith(".json"))) return true;
  }
  return false;
}

function isDebianLike() {
  try {
    return /debian|ubuntu/i.test(readFileSync("/etc/os-release", "utf8"));
  } catch {
    return false;
  }
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

function aptInstall(pkgs) {
  const cmd = `apt-get update && apt-get install -y --no-install-recommends ${pkgs.join(" ")}`;
  if (!(isDebianLike() && isRoot)) {
    say(`please install: ${pkgs.join(", ")}`);
    say(
      process.platform === "linux"
        ? `  run as root: ${cmd}`
        : "  (use your system's package manager)",
    );
    return false;
  }
  say(`installing ${pkgs.join(", ")} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  try {
    execFileSync("sh", ["-c", cmd], { stdio: ["ignore", "ignore", "inherit"], env });
    return true;
  } catch (e) {
    say(`apt-get failed (${e.message}); run it yourself: ${cmd}`);
    return false;
  }
}

function main() {
  if (process.env.PETTINGLLMS_SKIP_SETUP === "1") return say("skipped (PETTINGLLMS_SKIP_SETUP=1)");
  if (process.platform !== "linux") {
    say("not Linux: Deno uses the system's Metal/D3D12/Vulkan driver; nothing to install.");
    return;
  }
  const missing = [];
  let adapter = probeAdapter();
  if (!adapter && !hasVulkanIcd()) missing.push("mesa-vulkan-drivers");
  const chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].some(existsSync) ||
    process.env.CHROMIUM_PATH;
  if (!chromium) missing.push("chromium");
  if (missing.length) aptInstall(missing);
  adapter = probeAdapter();
  if (adapter) say(`WebGPU adapter for Deno: ${adapter}`);
  else {say(
      "no WebGPU adapter found for Deno; see the README's 'WebGPU on a machine without a GPU'.",
    );}
}

main();

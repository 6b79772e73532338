// The browser app's model sources and file exchange, clicked through in headless Chromium:
//
// - a Hugging Face folder picked with the folder input (<input type=file webkitdirectory>: File
//   objects), its tokenizer through transformers.js (tokenizer_config.json without the byte
//   tokenizer's marker), checked against the files written here: parameter count, a checksum of
//   every weight, the tokenizer kind;
// - the same folder in the origin-private file system (OPFS), opened through the page's
//   "choose folder…" button (showDirectoryPicker answered with an OPFS directory handle, since the
//   real picker cannot be automated): the policy's logits equal those of the picked files;
// - a 1-step run, then its checkpoint and each agent's PEFT adapter downloaded as ZIPs, opened here
//   (CRC, manifest sizes, safetensors headers, tensor names and shapes, a trained lora_B);
// - one PEFT ZIP uploaded back as the warm start: every agent's logits equal the trained agent's
//   and differ from the base model's;
// - a model by Hub id from a local server in the Hub's URL layout (the page's ?hub= endpoint):
//   sharded BF16 safetensors behind a redirect to signed "CDN" URLs and read in ranges (the
//   redirect followed once per shard), tokenizer files, a 404 for an absent optional file; the run
//   pauses (checkpoint in OPFS), the page reloads without ?hub=, the run resumes from that
//   checkpoint with the model fetched from its recorded endpoint again (this time the CDN URLs
//   expire mid-read and are resolved again), and finishes;
// - after the reload the OPFS model folder loads again, with the same logits.
//
// Runs are as small as the trainer allows (1 env × 2 candidates, one turn, 1 validation episode)
// because SwiftShader is slow; "0 steps" runs (validation only) load a model without training it.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import zlib from "node:zlib";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { launchBrowser, startVite, waitForApp } from "./browser.mjs";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const SRC_MODEL = join(REPO, "models/plan_path_tiny");
const HUB_ID = "tiny-org/plan-path-bf16";
const LOCAL_NAME = "plan-path-hf";
const OPFS_DIR = "e2e-model-plan-path-hf";
/** Every run here: smallest settings (the form's fields and --set values). */
const SMALL = {
  "rollout.envsPerStep": 1,
  "rollout.k": 2,
  "rollout.maxTurns": 1,
  "rollout.maxNewTokens": 48,
  "eval.everySteps": 0,
  "eval.episodes": 1,
  "run.checkpointEvery": 1,
  "run.seed": 3,
};
// plan_path_tiny was trained on unpadded tool lines (toolWidth 0), and learns first from the
// shaping's pay for moves towards the goal (rewards.shaping 1); its candidates are sampled at
// temperature 1 (the quickstart's 0.35 suits its own warm start), so the step has a spread.
const SETS =
  "env.difficulty.maxTurns=1, env.difficulty.size=5, env.difficulty.toolWidth=0, rewards.shaping=1, rollout.sampling.temperature=1, update.schedule.kind=constant, update.schedule.warmupSteps=0, update.optimizer.lr=0.01";
const PROMPT = "<|im_start|>user\nPlan a path from S to G.<|im_end|>\n<|im_start|>assistant\n";

// ---------------------------------------------------------------- safetensors and ZIP, here in Node

function readSafetensors(buf) {
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString("utf8"));
  const tensors = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    tensors.set(name, {
      dtype: t.dtype,
      shape: t.shape,
      data: buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]),
    });
  }
  return { metadata: header.__metadata__ ?? null, tensors, dataBytes: buf.length - 8 - n };
}

function writeSafetensors(entries, metadata = { format: "pt" }) {
  const header = { __metadata__: metadata };
  let off = 0;
  for (const e of entries) {
    header[e.name] = { dtype: e.dtype, shape: e.shape, data_offsets: [off, off + e.data.length] };
    off += e.data.length;
  }
  let json = Buffer.from(JSON.stringify(header), "utf8");
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, json, ...entries.map((e) => e.data)]);
}

/** A tensor's values as float32 (F32 or BF16). */
function values(t) {
  const b = Buffer.from(t.data); // aligned copy
  if (t.dtype === "F32") return new Float32Array(b.buffer, b.byteOffset, b.length / 4);
  if (t.dtype === "BF16") {
    const u16 = new Uint16Array(b.buffer, b.byteOffset, b.length / 2),
      u32 = new Uint32Array(u16.length);
    for (let i = 0; i < u16.length; i++) u32[i] = u16[i] << 16;
    return new Float32Array(u32.buffer);
  }
  throw new Error(`dtype ${t.dtype}`);
}

/** float32 → BF16 bytes, round to nearest even. */
function toBf16(f32) {
  const u32 = new Uint32Array(f32.buffer, f32.byteOffset, f32.length),
    out = Buffer.alloc(f32.length * 2);
  for (let i = 0; i < u32.length; i++) {
    out.writeUInt16LE(((u32[i] + 0x7fff + ((u32[i] >>> 16) & 1)) >>> 16) & 0xffff, i * 2);
  }
  return out;
}

const sumOf = (tensors) =>
  [...tensors.values()].reduce((s, t) => values(t).reduce((a, v) => a + v, s), 0);
const countOf = (tensors) =>
  [...tensors.values()].reduce((s, t) => s + t.shape.reduce((a, b) => a * b, 1), 0);

/** The entries of a ZIP archive, each checked against its CRC-32 (the app writes stored entries). */
function unzip(buf) {
  let eocd = -1;
  for (let i = buf.length - 22; i >= 0; i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  assert.ok(eocd >= 0, "no end-of-central-directory record: not a ZIP");
  const count = buf.readUInt16LE(eocd + 10);
  let o = buf.readUInt32LE(eocd + 16);
  const out = new Map();
  for (let i = 0; i < count; i++) {
    assert.equal(buf.readUInt32LE(o), 0x02014b50, "central directory entry");
    const method = buf.readUInt16LE(o + 10),
      crc = buf.readUInt32LE(o + 16),
      csize = buf.readUInt32LE(o + 20);
    const nlen = buf.readUInt16LE(o + 28),
      xlen = buf.readUInt16LE(o + 30),
      clen = buf.readUInt16LE(o + 32),
      local = buf.readUInt32LE(o + 42);
    const name = buf.subarray(o + 46, o + 46 + nlen).toString("utf8");
    o += 46 + nlen + xlen + clen;
    assert.equal(buf.readUInt32LE(local), 0x04034b50, `${name}: local header`);
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const raw = buf.subarray(start, start + csize);
    const data = method === 0
      ? raw
      : method === 8
      ? zlib.inflateRawSync(raw)
      : assert.fail(`${name}: method ${method}`);
    assert.equal(zlib.crc32(data), crc, `${name}: CRC`);
    out.set(name, data);
  }
  return out;
}

// ---------------------------------------------------------------- the model folders served and picked

/** plan_path_tiny as a plain HF folder: its tokenizer loads through transformers.js, not as the byte tokenizer. */
function hfFiles() {
  const tokConfig = JSON.parse(readFileSync(join(SRC_MODEL, "tokenizer_config.json"), "utf8"));
  delete tokConfig.pettingllms_byte_tokenizer;
  return new Map([
    ["config.json", readFileSync(join(SRC_MODEL, "config.json"))],
    ["generation_config.json", readFileSync(join(SRC_MODEL, "generation_config.json"))],
    ["tokenizer.json", readFileSync(join(SRC_MODEL, "tokenizer.json"))],
    ["tokenizer_config.json", Buffer.from(JSON.stringify(tokConfig, null, 2))],
    ["model.safetensors", readFileSync(join(SRC_MODEL, "model.safetensors"))],
  ]);
}

/** The same model on the Hub: BF16, two shards and an index, as HF's sharded checkpoints are. */
function hubFiles(local) {
  const { tensors } = readSafetensors(local.get("model.safetensors"));
  const names = [...tensors.keys()].sort();
  const shards = [
    names.filter((n) => !/layers\.1\.|model\.norm/.test(n)),
    names.filter((n) => /layers\.1\.|model\.norm/.test(n)),
  ];
  // Without generation_config.json (optional): the app must take the Hub's 404 as "absent".
  const files = new Map(
    [...local].filter(([f]) => f !== "model.safetensors" && f !== "generation_config.json"),
  );
  const weightMap = {};
  let total = 0;
  shards.forEach((ns, i) => {
    const file = `model-0000${i + 1}-of-00002.safetensors`;
    const entries = ns.map((n) => ({
      name: n,
      dtype: "BF16",
      shape: tensors.get(n).shape,
      data: toBf16(values(tensors.get(n))),
    }));
    for (const e of entries) {
      weightMap[e.name] = file;
      total += e.data.length;
    }
    files.set(file, writeSafetensors(entries));
  });
  files.set(
    "model.safetensors.index.json",
    Buffer.from(
      JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2),
    ),
  );
  return files;
}

/**
 * A Hub in miniature on 127.0.0.1: <id>/resolve/main/<file>, safetensors redirected to a "CDN"
 * path as the Hub does for LFS files, HEAD, Range (206 + Content-Range), CORS with the headers the
 * Hub exposes, 404 "Entry not found" for absent files. Every request is logged.
 */
function startHub(repos) {
  const log = [];
  // CDN URLs are signed and expire, as the Hub's do: here after `expireAfter` uses of one redirect.
  const tokens = new Map();
  let issued = 0;
  const hub = { server: null, log, url: "", expireAfter: Infinity };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://hub");
    const cors = {
      "access-control-allow-origin": "*",
      "access-control-allow-headers": "Range, Content-Type, Authorization",
      "access-control-allow-methods": "GET, HEAD, OPTIONS",
      "access-control-expose-headers":
        "Content-Range, Content-Length, Accept-Ranges, ETag, X-Repo-Commit, X-Error-Code",
    };
    const entry = {
      method: req.method,
      path: decodeURIComponent(url.pathname),
      range: req.headers.range ?? null,
      status: 0,
    };
    log.push(entry);
    const send = (status, headers, body) => {
      entry.status = status;
      res.writeHead(status, { ...cors, ...headers });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    if (req.method === "OPTIONS") return send(204, {});
    const cdn = entry.path.match(/^\/cdn\/(\d+)\/([^/]+\/[^/]+)\/(.+)$/);
    const m = cdn
      ? [null, cdn[2], cdn[3]]
      : entry.path.match(/^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/);
    const bytes = m && repos.get(m[1])?.get(m[2]);
    if (!bytes) {
      return send(
        404,
        { "content-type": "text/plain", "x-error-code": "EntryNotFound" },
        "Entry not found",
      );
    }
    if (cdn) {
      const uses = (tokens.get(cdn[1]) ?? 0) + 1;
      tokens.set(cdn[1], uses);
      if (uses > hub.expireAfter) {
        return send(403, { "content-type": "text/plain" }, "Request has expired");
      }
    } else if (m[2].endsWith(".safetensors")) {
      return send(302, { location: `${hub.url}/cdn/${++issued}/${m[1]}/${m[2]}` }, "");
    }
    const common = {
      "accept-ranges": "bytes",
      "content-type": "application/octet-stream",
      etag: `"${zlib.crc32(bytes)}"`,
    };
    const r = req.headers.range?.match(/^bytes=(\d+)-(\d*)$/);
    if (r) {
      const a = Number(r[1]),
        b = Math.min(r[2] === "" ? bytes.length - 1 : Number(r[2]), bytes.length - 1);
      if (a >= bytes.length) return send(416, { "content-range": `bytes */${bytes.length}` }, "");
      return send(206, {
        ...common,
        "content-range": `bytes ${a}-${b}/${bytes.length}`,
        "content-length": b - a + 1,
      }, bytes.subarray(a, b + 1));
    }
    send(200, { ...common, "content-length": bytes.length }, bytes);
  });
  hub.server = server;
  return new Promise((resolve) =>
    server.listen(
      0,
      "127.0.0.1",
      () => resolve(Object.assign(hub, { url: `http://127.0.0.1:${server.address().port}` })),
    )
  );
}

// ---------------------------------------------------------------- the page

const app = (page) =>
  page.evaluate(() => {
    const a = window.__app;
    return {
      ready: a.ready,
      state: a.state,
      step: a.step,
      total: a.total,
      runId: a.runId,
      resumedFrom: a.resumedFrom,
      charts: a.charts,
      evals: a.evals,
      errors: a.errors,
      log: a.log,
      status: a.status,
    };
  });

const waitFor = (page, what, pred, timeout) => waitForApp(page, app, what, pred, timeout, 200);

/** Fills the form for a small run (after the model is chosen: choosing one reloads the fields). */
async function fillSmall(page, steps) {
  for (const [path, v] of Object.entries({ ...SMALL, "run.steps": steps })) {
    await page.fill(`#f-${path.replaceAll(".", "-")}`, String(v));
  }
  await page.fill("#f-sets", SETS);
  assert.equal((await page.textContent("#f-errors")).trim(), "", "the form reports config errors");
}

/** Starts the form's run and waits until this new run has finished; the page's probe then. */
async function runToEnd(page, timeout = 120_000) {
  const prev = (await app(page)).runId;
  await page.click("#btn-start");
  return await waitFor(
    page,
    "the run to finish",
    (x) =>
      x.runId !== prev && x.state === "finished" && x.status?.runId === x.runId &&
      x.status.state === "finished",
    timeout,
  );
}

const logits = (page, agent) =>
  page.evaluate((req) => window.__appDebug.logits(req), { agent, text: PROMPT });
const maxDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

describe("browser app: model folders, Hub, ZIP download/upload, OPFS", { timeout: 600_000 }, () => {
  let vite, hub, browser, context, page, dir;
  const consoleErrors = [];
  const t0 = Date.now();
  const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
  const local = hfFiles();
  const localWeights = readSafetensors(local.get("model.safetensors")).tensors;
  const hubRepo = hubFiles(local);
  const hubWeights = new Map();
  for (const [f, b] of hubRepo) {
    if (f.endsWith(".safetensors")) {
      for (const [n, t] of readSafetensors(b).tensors) hubWeights.set(n, t);
    }
  }
  const downloads = [];
  /** Logits by agent: base model (picked files), base (OPFS), trained (1 step), warm-started from the upload. */
  const L = {};
  let agents, trainedRun, peftZips, baseSum, hubRun, hubCheckpoint, hubSum, checkpointZip;

  /** What the app asked the Hub for: config, index, both shards in ranges (after the LFS redirect), tokenizer files. */
  const checkHubTraffic = (when, expiring = false) => {
    const got = (path, pred = () => true) =>
      hub.log.filter((e) => e.path === `/${HUB_ID}/resolve/main/${path}` && pred(e));
    const summary = hub.log.map((e) => `${e.method} ${e.path} ${e.range ?? ""} ${e.status}`).join(
      "\n",
    );
    for (
      const f of [
        "config.json",
        "model.safetensors.index.json",
        "tokenizer.json",
        "tokenizer_config.json",
      ]
    ) {
      assert.ok(
        got(f, (e) => e.method === "GET" && e.status === 206).length,
        `${when}: ${f} not fetched:\n${summary}`,
      );
    }
    // Absent optional files are asked for and taken as absent (404), not as errors.
    assert.ok(
      got("generation_config.json", (e) => e.status === 404).length,
      `${when}: generation_config.json not looked for:\n${summary}`,
    );
    for (const shard of ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]) {
      const cdn = hub.log.filter((e) =>
        e.path.startsWith("/cdn/") && e.path.endsWith(`/${HUB_ID}/${shard}`) && e.method === "GET"
      );
      const redirects = got(shard, (e) => e.status === 302).length,
        expired = cdn.filter((e) => e.status === 403).length;
      const read = cdn.filter((e) => e.status === 206);
      assert.ok(
        read.length >= 10 && read.every((e) => /^bytes=\d+-\d+$/.test(e.range)),
        `${when}: ${shard} not read in ranges:\n${summary}`,
      );
      if (!expiring) {
        // resolve/main is asked once (the probe); the tensors are read where it redirected.
        assert.equal(redirects, 1, `${when}: ${shard} at resolve/main:\n${summary}`);
        assert.equal(expired, 0);
      } else {
        // Each expired CDN URL cost one failed read and one new redirect; no more.
        assert.ok(expired >= 2, `${when}: ${shard}: no CDN URL expired:\n${summary}`);
        assert.equal(
          redirects,
          1 + expired,
          `${when}: ${shard}: redirects vs expired URLs:\n${summary}`,
        );
      }
    }
  };

  const watch = (p) => {
    p.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    p.on("pageerror", (e) => consoleErrors.push(String(e)));
    p.on(
      "worker",
      (w) =>
        w.on("console", (m) => m.type() === "error" && consoleErrors.push(`worker: ${m.text()}`)),
    );
    p.on("download", (d) => downloads.push(d));
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "pllm-e2e-"));
    mkdirSync(join(dir, LOCAL_NAME));
    for (const [f, b] of local) writeFileSync(join(dir, LOCAL_NAME, f), b);
    [hub, vite] = await Promise.all([startHub(new Map([[HUB_ID, hubRepo]])), startVite()]);
    browser = await launchBrowser();
    context = await browser.newContext({
      viewport: { width: 1400, height: 1000 },
      acceptDownloads: true,
    });
    // showDirectoryPicker cannot be automated: answer it with an OPFS directory the test filled.
    await context.addInitScript((name) => {
      globalThis.showDirectoryPicker = async () =>
        (await navigator.storage.getDirectory()).getDirectoryHandle(name);
    }, OPFS_DIR);
    page = await context.newPage();
    watch(page);
  });

  after(async () => {
    await browser?.close();
    await vite?.server.close();
    hub?.server.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("loads a picked HF folder (webkitdirectory File objects, transformers.js tokenizer)", async () => {
    await page.goto(`${vite.url}/?hub=${encodeURIComponent(hub.url)}`);
    await waitFor(page, "the app", (x) => x.ready, 180_000);
    await page.selectOption("#f-model", "local");
    assert.match(await page.textContent("#f-errors"), /pick the model's folder/);
    await page.setInputFiles("#f-local", join(dir, LOCAL_NAME));
    await fillSmall(page, 0);
    const a = await runToEnd(page);
    console.log(`# local folder loaded and validated after ${secs()} s`);
    const mi = a.status.modelInfo;
    assert.equal(mi.label, `local folder ${LOCAL_NAME}`);
    assert.equal(mi.tokenizer, "hf");
    assert.equal(mi.params, countOf(localWeights));
    assert.equal(mi.params, 115_520);
    assert.deepEqual([mi.layers, mi.hidden, mi.vocab], [2, 64, 264]);
    const want = sumOf(localWeights);
    assert.ok(
      Math.abs(mi.weightsSum - want) < 1e-6 * Math.max(1, Math.abs(want)),
      `weights checksum ${mi.weightsSum} ≠ ${want}`,
    );
    assert.match(
      await page.textContent("#model-line"),
      /local folder plan-path-hf · 115,520 parameters \(2 layers × 64, vocabulary 264\) · HF tokenizer/,
    );
    assert.deepEqual(a.evals.map((e) => e.step), [0], "validation of the loaded model");
    baseSum = mi.weightsSum;
    agents = a.status.agents;
    assert.deepEqual([...agents].sort(), ["plan", "tool"]);
    for (const ag of agents) L[`base.${ag}`] = (await logits(page, ag)).logits;
    const r = await logits(page, agents[0]);
    assert.equal(r.logits.length, 264);
    assert.ok(r.logits.every(Number.isFinite));
    // transformers.js on the byte tokenizer's HF export: specials as single ids, the rest as bytes.
    const ids = PROMPT.split(/(<\|im_start\|>|<\|im_end\|>)/).flatMap((p) =>
      p === "<|im_start|>" ? [259] : p === "<|im_end|>" ? [260] : [...Buffer.from(p, "utf8")]
    );
    assert.deepEqual(r.promptIds, ids);
  });

  it("loads the same model from an OPFS folder through the folder button: same logits", async () => {
    const b64 = Object.fromEntries([...local].map(([f, b]) => [f, b.toString("base64")]));
    await page.evaluate(async ({ name, files }) => {
      const d = await (await navigator.storage.getDirectory()).getDirectoryHandle(name, {
        create: true,
      });
      for (const [f, s] of Object.entries(files)) {
        const w = await (await d.getFileHandle(f, { create: true })).createWritable();
        await w.write(Uint8Array.from(atob(s), (c) => c.charCodeAt(0)));
        await w.close();
      }
    }, { name: OPFS_DIR, files: b64 });
    await page.click("#f-local-fsa");
    await page.waitForFunction(
      (n) => document.querySelector("#f-local-fsa").textContent === n,
      OPFS_DIR,
    );
    await fillSmall(page, 0);
    const a = await runToEnd(page);
    assert.equal(a.status.modelInfo.label, `local folder ${OPFS_DIR}`);
    assert.equal(a.status.modelInfo.weightsSum, baseSum, "the same weights as the picked files");
    for (const ag of agents) {
      const l = (await logits(page, ag)).logits;
      assert.ok(
        maxDiff(l, L[`base.${ag}`]) === 0,
        `${ag}: OPFS model's logits differ from the picked files' by ${
          maxDiff(l, L[`base.${ag}`])
        }`,
      );
    }
    console.log(`# OPFS folder loaded after ${secs()} s`);
  });
  it("trains 1 step; the checkpoint and each PEFT adapter download as ZIPs with the right files and tensors", async () => {
    await page.setInputFiles("#f-local", join(dir, LOCAL_NAME));
    await fillSmall(page, 1);
    // Enough candidates that some group has a spread: a step whose every advantage is 0 takes no
    // optimizer step (no ghost update), and one env × 2 candidates often has none.
    await page.fill("#f-rollout-envsPerStep", "4");
    await page.fill("#f-rollout-k", "4");
    const rank = Number(await page.inputValue("#f-update-lora-rank"));
    const a = await runToEnd(page, 180_000);
    console.log(`# 1-step run finished after ${secs()} s`);
    assert.equal(a.step, 1);
    assert.equal(a.status.modelInfo.label, `local folder ${LOCAL_NAME}`);
    trainedRun = a.runId;
    for (const ag of agents) L[`trained.${ag}`] = (await logits(page, ag)).logits;
    const moved = agents.filter((ag) => maxDiff(L[`trained.${ag}`], L[`base.${ag}`]) > 1e-4);
    assert.ok(moved.length > 0, "one step moved no agent's policy");

    // The whole checkpoint: captured as the browser's download, opened here.
    const row = page.locator(`.run[data-run="${trainedRun}"]`);
    assert.match(await row.textContent(), /finished · checkpoint at step 1 of 1/);
    await row.locator("select").selectOption("step-1");
    const [dl] = await Promise.all([
      page.waitForEvent("download"),
      row.locator("button", { hasText: "download checkpoint" }).click(),
    ]);
    assert.equal(dl.suggestedFilename(), `${trainedRun}-step-1.zip`);
    checkpointZip = await dl.path();
    const ck = unzip(readFileSync(checkpointZip));
    const manifest = JSON.parse(ck.get("checkpoint.json").toString("utf8"));
    assert.equal(manifest.format, "pettingllms-checkpoint");
    assert.equal(manifest.step, 1);
    // L2: one LoRA adapter per agent over the frozen base, named <trainer>.<agent>.
    const adapterOf = Object.fromEntries(
      agents.map((ag) => [ag, manifest.adapters.find((n) => n.endsWith(`.${ag}`))]),
    );
    assert.equal(manifest.adapters.length, agents.length, manifest.adapters.join());
    assert.ok(
      agents.every((ag) => adapterOf[ag]),
      `adapters ${manifest.adapters.join()} for agents ${agents.join()}`,
    );
    assert.deepEqual(
      [...ck.keys()].filter((p) => p !== "checkpoint.json").sort(),
      Object.keys(manifest.files).sort(),
      "ZIP entries = manifest files",
    );
    for (const [p, size] of Object.entries(manifest.files)) {
      assert.equal(ck.get(p).length, size, `${p}: size in the manifest`);
    }
    for (const n of manifest.adapters) {
      assert.ok(
        ck.has(`adapters/${n}/adapter_config.json`) &&
          ck.has(`adapters/${n}/adapter_model.safetensors`),
        `adapter ${n}`,
      );
    }
    assert.ok(
      manifest.optimizers.length >= 1 &&
        manifest.optimizers.every((o) => ck.has(`optimizer/${o}.safetensors`)),
    );
    assert.equal(JSON.parse(ck.get("trainer_state.json").toString("utf8")).step, 1);

    // Each agent's PEFT adapter: one download per agent.
    const n0 = downloads.length;
    await row.locator("button", { hasText: "download PEFT adapters" }).click();
    const t1 = Date.now();
    while (downloads.length < n0 + agents.length && Date.now() - t1 < 30_000) {
      await page.waitForTimeout(100);
    }
    const got = downloads.slice(n0);
    assert.deepEqual(
      got.map((d) => d.suggestedFilename()).sort(),
      agents.map((ag) => `${trainedRun}-step-1-${adapterOf[ag]}-peft.zip`).sort(),
    );
    peftZips = {};
    const dims = {
      q_proj: [64, 64],
      k_proj: [64, 32],
      v_proj: [64, 32],
      o_proj: [64, 64],
      gate_proj: [64, 192],
      up_proj: [64, 192],
      down_proj: [192, 64],
    };
    for (const d of got) {
      const ag = agents.find((x) => d.suggestedFilename().endsWith(`-${adapterOf[x]}-peft.zip`));
      const path = join(dir, d.suggestedFilename());
      await d.saveAs(path);
      peftZips[ag] = path;
      const z = unzip(readFileSync(path));
      assert.deepEqual([...z.keys()].sort(), ["adapter_config.json", "adapter_model.safetensors"]);
      assert.ok(
        z.get("adapter_model.safetensors").equals(
          ck.get(`adapters/${adapterOf[ag]}/adapter_model.safetensors`),
        ),
        "the same bytes as in the checkpoint",
      );
      const cfg = JSON.parse(z.get("adapter_config.json").toString("utf8"));
      assert.equal(cfg.peft_type, "LORA");
      assert.equal(cfg.task_type, "CAUSAL_LM");
      assert.equal(cfg.r, rank);
      assert.equal(cfg.base_model_name_or_path, LOCAL_NAME, "the base as PEFT would look for it");
      assert.ok(
        cfg.target_modules.length > 0 && cfg.target_modules.every((m) => m in dims),
        cfg.target_modules.join(),
      );
      const { tensors } = readSafetensors(z.get("adapter_model.safetensors"));
      const want = [];
      for (let l = 0; l < 2; l++) {
        for (const m of cfg.target_modules) {
          const block = m.endsWith("proj") && ["gate_proj", "up_proj", "down_proj"].includes(m)
            ? "mlp"
            : "self_attn";
          const [fin, fout] = dims[m];
          want.push([`base_model.model.model.layers.${l}.${block}.${m}.lora_A.weight`, [
            cfg.r,
            fin,
          ]]);
          want.push([`base_model.model.model.layers.${l}.${block}.${m}.lora_B.weight`, [
            fout,
            cfg.r,
          ]]);
        }
      }
      assert.deepEqual(
        [...tensors.keys()].sort(),
        want.map(([n]) => n).sort(),
        `${ag}: tensor names`,
      );
      for (const [n, shape] of want) {
        assert.deepEqual(tensors.get(n).shape, shape, n);
        assert.equal(tensors.get(n).dtype, "F32", n);
        assert.ok(values(tensors.get(n)).every(Number.isFinite), n);
      }
      const bAbs = [...tensors].filter(([n]) => n.includes("lora_B")).reduce(
        (s, [, t]) => values(t).reduce((x, v) => x + Math.abs(v), s),
        0,
      );
      // LoRA starts with B = 0: the agents the step moved have a non-zero B.
      if (moved.includes(ag)) {
        assert.ok(bAbs > 0, `${ag}: lora_B is still zero after a step that moved its policy`);
      } else assert.equal(bAbs, 0, `${ag}: lora_B moved but its logits did not`);
    }
  });

  it("uploads a PEFT ZIP as the warm start: every agent starts from it", async () => {
    assert.ok(peftZips && checkpointZip, "needs the previous test's downloads");
    // A whole checkpoint holds one adapter per agent: refused, naming them, rather than guessed.
    // (Playwright keeps downloads under random names without ".zip": the page must sniff the format.)
    await page.setInputFiles("#f-adapter", checkpointZip);
    await page.waitForFunction(
      () => /hold 2 PEFT adapters/.test(document.querySelector("#adapter-note").textContent),
      null,
      { timeout: 30_000 },
    );
    const note = await page.textContent("#adapter-note");
    for (const ag of agents) assert.match(note, new RegExp(`adapters/[^,]*\\.${ag}\\b`), note);
    const from = agents.find((ag) => maxDiff(L[`trained.${ag}`], L[`base.${ag}`]) > 1e-4);
    await page.setInputFiles("#f-adapter", peftZips[from]);
    await page.waitForFunction(
      () =>
        /starts from this PEFT adapter/.test(document.querySelector("#adapter-note").textContent),
      null,
      { timeout: 30_000 },
    );
    await fillSmall(page, 0);
    const a = await runToEnd(page);
    assert.notEqual(a.runId, trainedRun);
    for (const ag of agents) {
      const r = await logits(page, ag);
      assert.match(r.adapter, /LoRA adapter/);
      const dTrained = maxDiff(r.logits, L[`trained.${from}`]),
        dBase = maxDiff(r.logits, L[`base.${ag}`]);
      assert.ok(
        dTrained < 1e-5,
        `${ag}: logits differ by ${dTrained} from ${from}'s trained policy`,
      );
      assert.ok(dBase > 1e-4, `${ag}: logits equal the base model's (Δ ${dBase})`);
    }
    // A bad upload is refused with a message, and clearing the input removes the warm start.
    await page.setInputFiles("#f-adapter", {
      name: "x.zip",
      mimeType: "application/zip",
      buffer: Buffer.from("not a zip"),
    });
    await page.waitForFunction(
      () => /ZIP/.test(document.querySelector("#adapter-note").textContent),
      null,
      { timeout: 30_000 },
    );
    await page.setInputFiles("#f-adapter", []);
    console.log(`# PEFT upload checked after ${secs()} s`);
  });
  it("loads a model by Hub id from the ?hub= endpoint: sharded BF16 safetensors over range requests", async () => {
    await page.selectOption("#f-model", "hub");
    assert.equal(
      await page.inputValue("#f-hub-endpoint"),
      hub.url,
      "the endpoint comes from ?hub=",
    );
    await page.fill("#f-hub", HUB_ID);
    await fillSmall(page, 2);
    hub.log.length = 0;
    await page.click("#btn-start");
    await waitFor(page, "running", (x) => x.state === "running", 180_000);
    await page.click("#btn-pause");
    const a = await waitFor(
      page,
      "paused after step 1",
      (x) => x.state === "paused" && x.status?.state === "paused" && x.status.runId === x.runId,
      120_000,
    );
    console.log(`# Hub run paused after ${secs()} s`);
    assert.equal(a.step, 1);
    hubRun = a.runId;
    const mi = a.status.modelInfo;
    assert.equal(mi.label, `Hub ${HUB_ID} (from ${hub.url})`);
    assert.equal(mi.tokenizer, "hf");
    assert.equal(mi.params, countOf(hubWeights));
    const want = sumOf(hubWeights);
    assert.ok(
      Math.abs(mi.weightsSum - want) < 1e-6 * Math.max(1, Math.abs(want)),
      `weights checksum ${mi.weightsSum} ≠ ${want} (BF16 values)`,
    );
    assert.notEqual(
      mi.weightsSum,
      baseSum,
      "BF16 weights were read as BF16, not as the F32 originals",
    );
    hubSum = mi.weightsSum;
    checkHubTraffic("first load");
    // The paused run's checkpoint, for comparison after the reload.
    const row = page.locator(`.run[data-run="${hubRun}"]`);
    await row.locator("select").selectOption("step-1");
    const [dl] = await Promise.all([
      page.waitForEvent("download"),
      row.locator("button", { hasText: "download checkpoint" }).click(),
    ]);
    hubCheckpoint = readFileSync(await dl.path());
    const ck = unzip(hubCheckpoint);
    assert.equal(JSON.parse(ck.get("checkpoint.json").toString("utf8")).step, 1);
    const cfgs = [...ck].filter(([p]) => p.endsWith("/adapter_config.json")).map(([, b]) =>
      JSON.parse(b.toString("utf8"))
    );
    assert.equal(cfgs.length, 2);
    for (const c of cfgs) {
      assert.equal(
        c.base_model_name_or_path,
        HUB_ID,
        "a PEFT adapter of a Hub model names its Hub id",
      );
    }
  });

  it("after a reload, the paused Hub run resumes from its OPFS checkpoint with the model fetched again", async () => {
    assert.ok(hubRun && hubCheckpoint, "needs the paused Hub run of the previous test");
    hub.log.length = 0;
    // A fresh page without ?hub=: the run itself remembers its endpoint.
    await page.goto(`${vite.url}/`);
    await waitFor(page, "the app after reload", (x) => x.ready, 180_000);
    await page.selectOption("#f-model", "hub");
    assert.equal(await page.inputValue("#f-hub-endpoint"), "https://huggingface.co");
    assert.match(
      await page.textContent("#banner"),
      new RegExp(`A run was interrupted[^]*${hubRun}[^]*step-1`),
    );
    const row = page.locator(`.run[data-run="${hubRun}"]`);
    assert.match(await row.textContent(), /paused · checkpoint at step 1 of 2/);
    await row.locator("select").selectOption("step-1");
    const [dl] = await Promise.all([
      page.waitForEvent("download"),
      row.locator("button", { hasText: "download checkpoint" }).click(),
    ]);
    assert.ok(
      readFileSync(await dl.path()).equals(hubCheckpoint),
      "the step-1 checkpoint read back from OPFS differs from the one before the reload",
    );
    assert.equal(hub.log.length, 0, "nothing fetched from the Hub before resuming");
    hub.expireAfter = 4; // this time the CDN URLs expire while the shards are read
    await row.locator(".run-resume").click();
    // Fetching the model again and compiling its kernels in SwiftShader, beside Deno's suite on
    // two cores: 60 s was once not enough (2026-11-27, state "loading").
    const r = await waitFor(page, "the resumed run", (x) => x.resumedFrom !== null, 180_000);
    assert.equal(r.resumedFrom, 1);
    assert.equal(r.runId, hubRun);
    checkHubTraffic("resume", true);
    const done = await waitFor(
      page,
      "the end of the resumed run",
      (x) => x.state === "finished" && x.status?.state === "finished" && x.status.runId === hubRun,
      120_000,
    );
    console.log(`# Hub run resumed and finished after ${secs()} s`);
    assert.equal(done.step, 2);
    assert.equal(done.status.modelInfo.label, `Hub ${HUB_ID} (from ${hub.url})`);
    assert.equal(done.status.modelInfo.weightsSum, hubSum, "the same weights as before the reload");
    const lines = await page.evaluate((id) => window.__appDebug.readMetrics(id), hubRun);
    assert.deepEqual(
      lines.map((l) => l.step),
      [0, 1, 2],
      "metrics.jsonl in OPFS: step 0 validation, step 1 (before the reload), step 2",
    );
    assert.ok(done.charts.reward >= 2, JSON.stringify(done.charts));
  });

  it("after the reload, the model folder in OPFS loads again with the same logits", async () => {
    await page.selectOption("#f-model", "local");
    await page.click("#f-local-fsa");
    await page.waitForFunction(
      (n) => document.querySelector("#f-local-fsa").textContent === n,
      OPFS_DIR,
    );
    await fillSmall(page, 0);
    const a = await runToEnd(page);
    assert.equal(a.status.modelInfo.label, `local folder ${OPFS_DIR}`);
    assert.equal(a.status.modelInfo.weightsSum, baseSum);
    for (const ag of agents) {
      const l = (await logits(page, ag)).logits;
      assert.equal(maxDiff(l, L[`base.${ag}`]), 0, `${ag}: logits after the reload`);
    }
    console.log(`# OPFS folder reloaded after ${secs()} s`);
  });

  it("logged no console errors", () => {
    assert.deepEqual(consoleErrors, []);
  });
});

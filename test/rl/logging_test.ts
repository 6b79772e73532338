// TensorBoard and Weights & Biases end to end: a tiny run through the train CLI (W&B on by --set,
// the key from WANDB_API_KEY) against a local server that records every request, then a resume
// of one more step through the library. The events files are read with an independent reader
// (test/io/tfevents_reader.ts); the recorded requests are compared with the metrics.jsonl lines
// and, in shape, with a recording of W&B's own JavaScript SDK (test/fixtures/wandb_js_sdk_requests.json).

import { assert, assertEquals } from "../assert.ts";
import { parseConfig } from "../../src/rl/config.ts";
import { metricScalars } from "../../src/rl/metric_scalars.ts";
import { resumeConfig, train } from "../../src/rl/train.ts";
import { readEventsFile } from "../io/tfevents_reader.ts";
import { DENO } from "./train_cli_helpers.ts";

interface Recorded {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** A stand-in W&B server: records every POST, answers UpsertBucket with the history lines it holds for the run. */
function recordingServer() {
  const requests: Recorded[] = [];
  const lines = new Map<string, number>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const body = JSON.parse(await req.text());
    requests.push({ path: url.pathname, headers: Object.fromEntries(req.headers), body });
    if (url.pathname === "/graphql") {
      const v = body.variables;
      return Response.json({
        data: {
          upsertBucket: {
            bucket: {
              id: "QnVja2V0",
              name: v.name,
              displayName: v.displayName,
              historyLineCount: lines.get(v.name) ?? 0,
              project: {
                id: "UHJvamVjdA",
                name: v.project,
                entity: { id: "RW50aXR5", name: v.entity ?? "default-entity" },
              },
            },
            inserted: !lines.has(v.name),
          },
        },
      });
    }
    const m = url.pathname.match(/^\/files\/([^/]+)\/([^/]+)\/([^/]+)\/file_stream$/);
    if (!m) return new Response("not found", { status: 404 });
    const h = body.files?.["wandb-history.jsonl"];
    if (h) lines.set(m[3], h.offset + h.content.length);
    return Response.json({ exitcode: null, limits: {} });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, requests, close: () => server.shutdown() };
}

/** The train_test tiny run (warm-started tiny model, 2 envs x 2 candidates), with validation before training. */
const tiny = (outDir: string) => ({
  model: { preset: null, folder: "models/plan_path_tiny" },
  env: { id: "plan_path_v1", difficulty: { size: 4, wallDensity: 0.1, maxTurns: 1 } },
  level: "L2",
  rollout: {
    mode: "tree",
    k: 2,
    envsPerStep: 2,
    maxTurns: 1,
    maxPromptTokens: 128,
    maxNewTokens: 12,
  },
  update: {
    mode: "lora",
    miniBatchSize: 8,
    chunkRows: 160,
    lora: { rank: 4, alpha: 8 },
    optimizer: { lr: 1e-3 },
    schedule: { kind: "constant", warmupSteps: 0 },
  },
  eval: { everySteps: 100, episodes: 1, beforeTraining: true },
  run: {
    outDir,
    name: "log",
    steps: 2,
    checkpointEvery: 1,
    keepLast: 3,
    seed: 3,
    saveRollouts: false,
  },
});

const KEY = "local-test-key-0123456789abcdef0123456789";

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...await filesUnder(p));
    else if (e.isFile) out.push(p);
  }
  return out;
}

/** Scalars as TensorBoard stores them (float32). */
const asFloat32 = (s: Record<string, number>) =>
  Object.fromEntries(Object.entries(s).map(([k, v]) => [k, Math.fround(v)]));

Deno.test("logging: the train CLI writes TensorBoard events and sends W&B what the SDK sends; a resume continues both", async () => {
  assertEquals(parseConfig({}).logging, {
    tensorboard: true,
    wandb: { project: null, entity: null, name: null, mode: "online", baseUrl: null },
  });
  const root = await Deno.makeTempDir();
  const srv = recordingServer();
  try {
    const cfgPath = `${root}/tiny.json`;
    await Deno.writeTextFile(cfgPath, JSON.stringify(tiny(`${root}/runs`)));
    const out = await new Deno.Command(DENO, {
      args: [
        "run",
        "-A",
        "src/cli/train.ts",
        "--config",
        cfgPath,
        "--set",
        `logging.wandb.project=pllm-test,logging.wandb.entity=team,logging.wandb.baseUrl=${srv.url}`,
      ],
      env: { NO_COLOR: "1", WANDB_API_KEY: KEY },
      stdin: "null",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 0, text);
    const runDir = text.match(/run directory: (\S+)/)![1];
    assert(text.includes(`W&B: ${srv.url}/team/pllm-test/runs/`), text);
    assert(!text.includes("warning: W&B"), text);

    // Resume through the library: one more step, the key passed in.
    const cfg = await resumeConfig(runDir, ["run.steps=3"]);
    const log: string[] = [];
    await train(cfg, { resume: runDir, log: (l) => log.push(l), wandbApiKey: KEY });
    assert(!log.some((l) => l.includes("warning: W&B")), log.join("\n"));

    const metrics = (await Deno.readTextFile(`${runDir}/metrics.jsonl`)).trim().split("\n").map((
      l,
    ) => JSON.parse(l));
    assertEquals(metrics.map((m) => m.step), [0, 1, 2, 3]);
    const expected = new Map(metrics.map((m) => [m.step as number, metricScalars(m)]));
    for (const s of [0, 2, 3]) {
      assert("eval/successRate" in expected.get(s)!, `step ${s} has no eval scalars`);
    }
    for (
      const tag of [
        "reward/mean",
        "reward/plan",
        "update/loss",
        "update/gradNorm",
        "seconds/rollout",
        "train/samples",
      ]
    ) {
      assert(tag in expected.get(1)!, `no ${tag}: ${Object.keys(expected.get(1)!)}`);
    }

    // TensorBoard: one events file per session, read back with the independent reader.
    const files = (await filesUnder(runDir)).filter((f) =>
      /\/events\.out\.tfevents\.\d{10}\.[^/]+\.\d+\.\d+$/.test(f)
    ).sort();
    assertEquals(files.length, 2, `events files: ${files}`);
    const sessions = await Promise.all(
      files.map(async (f) => readEventsFile(await Deno.readFile(f))),
    );
    for (const ev of sessions) assertEquals(ev[0].fileVersion, "brain.Event:2");
    const first = sessions[0].slice(1), second = sessions[1].slice(1);
    assertEquals(first.map((e) => e.step), [0, 1, 2]);
    // The resume's file opens with a SessionLog START at the first redone step.
    assertEquals([second[0].step, second[0].sessionStatus], [3, 1]);
    assertEquals(second.slice(1).map((e) => e.step), [3]);
    for (const e of [...first, ...second.slice(1)]) {
      assertEquals(e.scalars, asFloat32(expected.get(e.step)!), `step ${e.step}`);
    }

    // W&B: the same run id both sessions, its history the metrics lines, posted with the key.
    const { id } = JSON.parse(await Deno.readTextFile(`${runDir}/wandb/run.json`));
    assert(/^[a-z0-9]{8}$/.test(id), id);
    for (const r of srv.requests) {
      assertEquals(r.headers.authorization, `Basic ${btoa(`api:${KEY}`)}`);
      assertEquals(r.headers["content-type"], "application/json");
    }
    const upserts = srv.requests.filter((r) => r.path === "/graphql");
    assertEquals(upserts.length, 2);
    for (const u of upserts) {
      assertEquals(u.body.operationName, "UpsertBucket");
      const v = u.body.variables as Record<string, string>;
      assertEquals([v.name, v.project, v.entity, v.displayName], [
        id,
        "pllm-test",
        "team",
        `log/${runDir.split("/").pop()}`,
      ]);
      assertEquals(JSON.parse(v.config).rollout.value.k, 2);
    }
    const streams = srv.requests.filter((r) =>
      r.path === `/files/team/pllm-test/${id}/file_stream`
    );
    assertEquals(
      streams.length,
      srv.requests.length - 2,
      "every other request is to the run's file_stream",
    );
    const posts = streams.filter((r) => r.body.files) as unknown as {
      body: { files: Record<string, { offset: number; content: string[] }> };
    }[];
    const rows: Record<string, number>[] = [];
    for (const p of posts) {
      const h = p.body.files["wandb-history.jsonl"];
      assertEquals(
        h.offset,
        rows.length,
        "history offsets continue where the last post (or session) ended",
      );
      rows.push(...h.content.map((l) => JSON.parse(l)));
      assertEquals(
        JSON.parse(p.body.files["wandb-summary.json"].content[0])._step,
        rows[rows.length - 1]._step,
      );
    }
    assertEquals(rows.map((r) => r._step), [0, 1, 2, 3]);
    for (const r of rows) {
      const { _step, _runtime, _timestamp, ...scalars } = r;
      assert(_runtime >= 0 && Math.abs(_timestamp - Date.now() / 1000) < 600, JSON.stringify(r));
      const want = Object.fromEntries(
        Object.entries(expected.get(_step)!).filter(([, v]) => Number.isFinite(v)),
      );
      assertEquals(scalars, want, `W&B row at step ${_step}`);
    }
    // Each session ends with complete/exitcode 0.
    const ends = streams.filter((r) => r.body.complete !== undefined);
    assertEquals(ends.map((r) => r.body), [{ complete: true, exitcode: 0 }, {
      complete: true,
      exitcode: 0,
    }]);

    // Shape: the same endpoints, body fields and history keys as W&B's JavaScript SDK sends.
    const sdk = JSON.parse(await Deno.readTextFile("test/fixtures/wandb_js_sdk_requests.json"))
      .requests as Recorded[];
    const sdkUpsert = sdk.find((r) => r.body.operationName === "UpsertBucket")!;
    assertEquals(Object.keys(upserts[0].body).sort(), ["operationName", "query", "variables"]);
    assertEquals(
      Object.keys(sdkUpsert.body.variables as object).sort(),
      Object.keys(upserts[0].body.variables as object).sort(),
    );
    const sdkPost = sdk.find((r) => r.body.files)!.body.files as Record<
      string,
      { offset: number; content: string[] }
    >;
    assertEquals(Object.keys(posts[0].body.files).sort(), Object.keys(sdkPost).sort());
    assertEquals(
      Object.keys(posts[0].body.files["wandb-history.jsonl"]).sort(),
      Object.keys(sdkPost["wandb-history.jsonl"]).sort(),
    );
    const sdkRow = JSON.parse(sdkPost["wandb-history.jsonl"].content[0]);
    for (const k of Object.keys(sdkRow).filter((k) => k.startsWith("_"))) {
      assert(k in rows[0], `history rows lack ${k}`);
    }
    assertEquals(
      Object.keys(sdk.find((r) => r.body.complete)!.body).sort(),
      Object.keys(ends[0].body).sort(),
    );
    assertEquals(
      sdk[0].headers.authorization,
      `Basic ${btoa(`api:${"k".repeat(40)}`)}`,
      "the SDK's auth header has the same form",
    );

    // The key is sent, never written: not in the run directory, not in the output.
    for (const f of await filesUnder(runDir)) {
      const bytes = await Deno.readFile(f);
      assert(!new TextDecoder().decode(bytes).includes(KEY), `${f} holds the API key`);
    }
    assert(!text.includes(KEY) && !log.join("\n").includes(KEY), "the API key was printed");
  } finally {
    await srv.close();
    await Deno.remove(root, { recursive: true });
  }
});

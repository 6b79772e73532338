// The W&B client's failure and offline paths, without a training run: an unreachable server or
// a rejected key warns once (never with the key) and never throws; offline mode writes the
// history, summary and config through the host's writer.

import { assert, assertEquals } from "../assert.ts";
import { newWandbRunId, WandbRun } from "../../src/rl/wandb.ts";

const KEY = "secret-key-that-must-not-be-shown-0123456789";
const base = { project: "p", entity: "e", name: "n", runId: "abcd1234" };

Deno.test("W&B: an unreachable server warns once and training goes on", async () => {
  // A port that was just free: nothing listens there.
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const warnings: string[] = [];
  const run = await WandbRun.start({
    ...base,
    mode: "online",
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: KEY,
    warn: (w) => warnings.push(w),
    timeoutMs: 2000,
  });
  await run.log(1, { a: 1 });
  await run.finish(0);
  assertEquals(warnings.length, 1, warnings.join("\n"));
  assert(warnings[0].startsWith("W&B: could not create the run at http://127.0.0.1:"), warnings[0]);
  assert(!run.enabled);
});

Deno.test("W&B: a rejected key, then metrics that cannot be sent, warn with a hint and a count, never the key", async () => {
  let upserts = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.body?.cancel();
    if (new URL(req.url).pathname === "/graphql") {
      upserts++;
      return Response.json({
        data: {
          upsertBucket: {
            bucket: { name: "abcd1234", project: { name: "p", entity: { name: "e" } } },
          },
        },
      });
    }
    return new Response(`bad key ${KEY}`, { status: 401, statusText: "Unauthorized" });
  });
  try {
    const warnings: string[] = [];
    const run = await WandbRun.start({
      ...base,
      mode: "online",
      baseUrl: `http://127.0.0.1:${server.addr.port}/`,
      apiKey: KEY,
      warn: (w) => warnings.push(w),
    });
    assertEquals(run.url, `http://127.0.0.1:${server.addr.port}/e/p/runs/abcd1234`);
    await run.log(1, { a: 1, b: NaN });
    await run.log(2, { a: 2 });
    await run.finish(0);
    assertEquals(upserts, 1);
    assertEquals(warnings.length, 2, warnings.join("\n"));
    assert(warnings[0].includes("HTTP 401") && warnings[0].includes("WANDB_API_KEY"), warnings[0]);
    assert(warnings[1].includes("2 step(s) of metrics were not sent"), warnings[1]);
    assert(!warnings.join("\n").includes(KEY));
  } finally {
    await server.shutdown();
  }
});

Deno.test("W&B: no API key online is a warning, not an error; offline writes history, summary and config", async () => {
  const warnings: string[] = [];
  const noKey = await WandbRun.start({
    ...base,
    mode: "online",
    baseUrl: "http://127.0.0.1:9",
    warn: (w) => warnings.push(w),
  });
  assert(!noKey.enabled && warnings[0].includes("WANDB_API_KEY is not set"), warnings.join("\n"));

  const files = new Map<string, string>();
  const run = await WandbRun.start({
    ...base,
    mode: "offline",
    baseUrl: "http://unused",
    config: { rollout: { k: 2 } },
    warn: (w) => warnings.push(w),
    writeOffline: (file, text, append) =>
      Promise.resolve(void files.set(file, (append ? files.get(file) ?? "" : "") + text)),
  });
  await run.log(0, { "eval/successRate": 0.5 });
  await run.log(1, { "reward/mean": 1, "update/loss": Infinity });
  await run.finish(0);
  assertEquals(warnings.length, 1);
  const rows = files.get("wandb-history.jsonl")!.trim().split("\n").map((l) => JSON.parse(l));
  assertEquals(
    rows.map((r) => [r._step, r["eval/successRate"], r["reward/mean"], "update/loss" in r]),
    [[0, 0.5, undefined, false], [1, undefined, 1, false]],
  );
  assert(rows.every((r) => typeof r._runtime === "number" && typeof r._timestamp === "number"));
  assertEquals(JSON.parse(files.get("wandb-summary.json")!)["eval/successRate"], 0.5);
  assertEquals(JSON.parse(files.get("config.json")!), { rollout: { k: 2 } });
  let seq = 0;
  assertEquals(newWandbRunId(() => (seq++ % 36) / 36), "abcdefgh");
});

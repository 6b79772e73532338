// The model server (`deno task serve`) as the real component, in process on a free port with the
// warm Plan-Path model: /v1/models, completions with stop and max_tokens against the engine's own
// greedy tokens, streaming chunks that add up to the non-streamed text, log-probs equal to the
// engine's scoring, concurrent requests batched into one generation with the sequential answers,
// seeds that repeat, chat through the byte tokenizer's ChatML template, and clear 4xx errors.

import { assert, assertEquals } from "../assert.ts";
import { currentAgent } from "../../src/envs/api.ts";
import { getEnv } from "../../src/envs/registry.ts";
import { Gpu } from "../../src/gpu/mod.ts";
import { denoFolder } from "../../src/io/deno_files.ts";
import { TokenizerError } from "../../src/model/errors.ts";
import { loadTokenizer, type Tokenizer } from "../../src/model/tokenizer.ts";
import { loadModel } from "../../src/model/weights.ts";
import { openAiHandler } from "../../src/serve/openai.ts";
import { createModelServer, startServer } from "../../src/serve/server.ts";

/** Compact Plan-Path prompts of the tool agent, as rollouts build them. */
function prompts(n: number): string[] {
  const env = getEnv("plan_path_v1");
  return Array.from({ length: n }, (_, i) => {
    const st = env.reset(
      env.generate(1_000_000 + i, {
        split: "test",
        difficulty: { size: 5, wallDensity: 0.2, maxTurns: 2, toolWidth: 19 },
      }),
    );
    const p = env.observe(st, currentAgent(env, st)!, "compact");
    return p.style === "compact" ? p.text : "";
  });
}

async function post(
  url: string,
  body: unknown,
  // deno-lint-ignore no-explicit-any -- JSON replies, read field by field
): Promise<{ status: number; json: Record<string, any> }> {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

/** The SSE `data:` payloads of a streamed reply, in order. */
async function stream(url: string, body: unknown): Promise<string[]> {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body as object, stream: true }),
  });
  assertEquals(r.headers.get("content-type"), "text/event-stream");
  const text = await r.text();
  return text.split("\n\n").filter((s) => s.trim()).map((s) => {
    assert(s.startsWith("data: "), `an SSE event: ${s}`);
    return s.slice(6);
  });
}

Deno.test("model server: OpenAI-compatible API on the engine", async (t) => {
  const folder = denoFolder("models/plan_path_warm");
  const weights = await loadModel(folder);
  const tokenizer = await loadTokenizer(folder, { config: weights.config });
  const gpu = await Gpu.create();
  const srv = await createModelServer(gpu, weights, tokenizer, {
    id: "plan_path_warm",
    maxBatch: 4,
    maxLen: 160,
    windowMs: 100,
  });
  const running = startServer(srv.handler);
  const base = `${running.url}/v1`;
  const ps = prompts(4);
  const greedy = async (text: string, max: number) => {
    const [r] = await srv.generator.generate([{
      prompt: tokenizer.encode(text),
      maxNewTokens: max,
      stopIds: tokenizer.stopIds,
      sampling: { temperature: 0 },
    }]);
    return r;
  };
  try {
    await t.step("/v1/models lists the model", async () => {
      const r = await fetch(`${base}/models`);
      const body = await r.json();
      assertEquals(body.object, "list");
      assertEquals(body.data.map((m: { id: string }) => m.id), ["plan_path_warm"]);
      assertEquals(body.data[0].max_model_len, 160);
    });

    await t.step(
      "completions: greedy text is the engine's; max_tokens cuts, stop strings end and are left out",
      async () => {
        const ref = await greedy(ps[0], 40);
        const refText = tokenizer.decode(ref.ids, { skipSpecialTokens: true });
        assert(refText.length >= 6, `the warm model writes something: ${JSON.stringify(refText)}`);
        const full = await post(`${base}/completions`, {
          model: "plan_path_warm",
          prompt: ps[0],
          max_tokens: 40,
          temperature: 0,
        });
        assertEquals(full.status, 200, JSON.stringify(full.json));
        assertEquals(full.json.object, "text_completion");
        assertEquals(full.json.choices[0].text, refText);
        assertEquals(full.json.usage.prompt_tokens, tokenizer.encode(ps[0]).length);
        assertEquals(full.json.usage.completion_tokens, ref.ids.length);
        const short = await post(`${base}/completions`, {
          prompt: ps[0],
          max_tokens: 3,
          temperature: 0,
        });
        assertEquals(
          short.json.choices[0].text,
          tokenizer.decode(ref.ids.slice(0, 3), { skipSpecialTokens: true }),
        );
        assertEquals(short.json.choices[0].finish_reason, "length");
        assertEquals(short.json.usage.completion_tokens, 3);
        const stop = refText.slice(3, 5);
        const cut = await post(`${base}/completions`, {
          prompt: ps[0],
          max_tokens: 40,
          temperature: 0,
          stop: [stop, "\u0000never"],
        });
        assertEquals(cut.json.choices[0].text, refText.slice(0, refText.indexOf(stop)));
        assertEquals(cut.json.choices[0].finish_reason, "stop");
      },
    );

    await t.step(
      "logprobs are the engine's scores of the same tokens; token ids on request",
      async () => {
        const r = await post(`${base}/completions`, {
          prompt: ps[1],
          max_tokens: 12,
          temperature: 0,
          logprobs: 1,
          return_tokens_as_token_ids: true,
        });
        const lp = r.json.choices[0].logprobs;
        const ids = (lp.tokens as string[]).map((s) => Number(s.replace("token_id:", "")));
        assertEquals(tokenizer.decode(ids, { skipSpecialTokens: true }), r.json.choices[0].text);
        const prompt = tokenizer.encode(ps[1]);
        const scored = await srv.generator.logprobs([...prompt, ...ids]);
        const tail = Array.from(scored.slice(prompt.length - 1));
        assertEquals(lp.token_logprobs.length, ids.length);
        lp.token_logprobs.forEach((v: number, i: number) =>
          assert(Math.abs(v - tail[i]) < 2e-3, `token ${i}: served ${v}, scored ${tail[i]}`)
        );
        const plain = await post(`${base}/completions`, {
          prompt: ps[1],
          max_tokens: 12,
          temperature: 0,
          logprobs: 0,
        });
        assertEquals(plain.json.choices[0].logprobs.tokens.join(""), plain.json.choices[0].text);
      },
    );

    await t.step(
      "streaming: chunks add up to the non-streamed text, then [DONE] (completions and chat)",
      async () => {
        for (const stop of [undefined, ["G="]]) {
          const body = { prompt: ps[2], max_tokens: 30, temperature: 0, stop };
          const once = await post(`${base}/completions`, body);
          const events = await stream(`${base}/completions`, body);
          assertEquals(events.at(-1), "[DONE]");
          const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
          assert(chunks.length >= 2, `several chunks: ${chunks.length}`);
          assertEquals(chunks.map((c) => c.choices[0].text).join(""), once.json.choices[0].text);
          assertEquals(chunks.at(-1).choices[0].finish_reason, once.json.choices[0].finish_reason);
        }
        const chat = {
          messages: [{ role: "user", content: "hello" }],
          max_tokens: 16,
          temperature: 0,
        };
        const once = await post(`${base}/chat/completions`, chat);
        assertEquals(once.status, 200, JSON.stringify(once.json));
        assertEquals(once.json.object, "chat.completion");
        assertEquals(once.json.choices[0].message.role, "assistant");
        const ref = await srv.generator.generate([{
          prompt: tokenizer.encodeChat(chat.messages, { addGenerationPrompt: true }),
          maxNewTokens: 16,
          stopIds: tokenizer.stopIds,
          sampling: { temperature: 0 },
        }]);
        assertEquals(
          once.json.choices[0].message.content,
          tokenizer.decode(ref[0].ids, { skipSpecialTokens: true }),
        );
        const events = await stream(`${base}/chat/completions`, {
          ...chat,
          stream_options: { include_usage: true },
        });
        assertEquals(events.at(-1), "[DONE]");
        const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
        assertEquals(chunks[0].choices[0].delta.role, "assistant");
        assertEquals(
          chunks.flatMap((c) =>
            c.choices.map((x: { delta: { content?: string } }) => x.delta.content ?? "")
          ).join(""),
          once.json.choices[0].message.content,
        );
        assertEquals(chunks.at(-1).usage.completion_tokens, once.json.usage.completion_tokens);
      },
    );

    await t.step(
      "concurrent requests share one generation and equal their sequential answers; seeds repeat",
      async () => {
        const bodies = ps.map((prompt, i) => ({
          prompt,
          max_tokens: 24,
          ...(i < 2 ? { temperature: 0 } : { temperature: 1, top_p: 0.9, seed: 7 + i }),
        }));
        const sequential = [];
        for (const b of bodies) {
          sequential.push((await post(`${base}/completions`, b)).json.choices[0].text);
        }
        const before = srv.queue.generationCalls;
        const together = await Promise.all(bodies.map((b) => post(`${base}/completions`, b)));
        assertEquals(
          srv.queue.generationCalls - before,
          1,
          `batch sizes ${srv.queue.batchSizes.slice(before)}`,
        );
        assertEquals(srv.queue.batchSizes.at(-1), 4);
        assertEquals(together.map((r) => r.json.choices[0].text), sequential);
        const n = await post(`${base}/completions`, {
          prompt: ps[3],
          max_tokens: 24,
          temperature: 1,
          seed: 3,
          n: 2,
        });
        assertEquals(n.json.choices.length, 2);
      },
    );

    await t.step(
      "errors: 404 unknown model or route, 400 for a too-long request, top log-probs, no chat template",
      async () => {
        assertEquals(
          (await post(`${base}/completions`, { model: "gpt-4", prompt: "x" })).status,
          404,
        );
        assertEquals(
          await fetch(`${base}/embeddings`, { method: "POST", body: "{}" }).then(async (
            r,
          ) => (await r.body?.cancel(), r.status)),
          404,
        );
        const long = await post(`${base}/completions`, { prompt: "x".repeat(150), max_tokens: 20 });
        assertEquals(long.status, 400);
        assert(long.json.error.message.includes("160"), long.json.error.message);
        assertEquals((await post(`${base}/completions`, { prompt: "x", logprobs: 5 })).status, 400);
        assertEquals(
          (await post(`${base}/completions`, { prompt: "x", temperature: -1 })).status,
          400,
        );
        // A tokenizer without a chat template (an HF folder that has none): a 400 that says so.
        const noTemplate: Tokenizer = Object.create(tokenizer, {
          encodeChat: {
            value: () => {
              throw new TokenizerError("this tokenizer has no chat template");
            },
          },
        });
        const h = openAiHandler({ ...srv.model, tokenizer: noTemplate });
        const r = await h(
          new Request("http://x/v1/chat/completions", {
            method: "POST",
            body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }),
          }),
        );
        assertEquals(r.status, 400);
        const msg = (await r.json()).error.message as string;
        assert(msg.includes("chat template") && msg.includes("/v1/completions"), msg);
      },
    );
  } finally {
    await running.shutdown();
    srv.destroy();
    gpu.destroy();
  }
});

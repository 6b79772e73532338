// A Hub repository read file by file over HTTP (src/model/hub.ts), against a local server laid
// out as the Hub's resolve/<revision>/ URLs: weights, tokenizer and chat template load as from
// a folder, the token goes out as a Bearer header, and `deno task train`'s loader (loadBase)
// takes model.hub from $HF_ENDPOINT.

import { assert, assertEquals } from "../assert.ts";
import { hfFolderFiles, initModel } from "../../src/model/init.ts";
import { hubBaseUrl, hubFolder } from "../../src/model/hub.ts";
import { loadTokenizer } from "../../src/model/tokenizer.ts";
import { loadModel } from "../../src/model/weights.ts";
import { parseConfig } from "../../src/rl/config.ts";
import { loadBase } from "../../src/rl/train.ts";
import { qwenTokenizerFiles, reducedConfig } from "../rl/hf_chat_fixtures.ts";

Deno.test("hubBaseUrl: endpoint, id and revision as the Hub lays them out", () => {
  assertEquals(
    hubBaseUrl("Qwen/Qwen2.5-0.5B-Instruct"),
    "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/main/",
  );
  assertEquals(
    hubBaseUrl("a/b", { endpoint: "http://127.0.0.1:9/", revision: "refs/pr/1" }),
    "http://127.0.0.1:9/a/b/resolve/refs%2Fpr%2F1/",
  );
});

Deno.test("a Hub model over HTTP: weights, tokenizer with its chat template, token header, and loadBase via HF_ENDPOINT", async () => {
  const weights = initModel(await reducedConfig("qwen2.5-0.5b"), { seed: 2 });
  const files = hfFolderFiles(weights);
  for (const [n, b] of await qwenTokenizerFiles()) files.set(n, b);
  const auth: (string | null)[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (req) => {
    auth.push(req.headers.get("authorization"));
    const m = new URL(req.url).pathname.match(/^\/Qwen\/tiny\/resolve\/main\/(.+)$/);
    const body = m ? files.get(decodeURIComponent(m[1])) : undefined;
    return body
      ? new Response(body as Uint8Array<ArrayBuffer>)
      : new Response("not found", { status: 404 });
  });
  const endpoint = `http://127.0.0.1:${server.addr.port}`;
  try {
    const folder = hubFolder("Qwen/tiny", { endpoint, token: "hf_test" });
    const got = await loadModel(folder);
    assertEquals(got.config.vocabSize, 151936);
    assertEquals(got.data.length, weights.data.length);
    assert(got.data.every((v, i) => v === weights.data[i]), "weights differ from the served file");
    const tok = await loadTokenizer(folder, { config: got.config });
    assertEquals([tok.kind, tok.hasChatTemplate], ["hf", true]);
    assert(tok.stopIds.includes(151645), "<|im_end|> (config eos) stops generation");
    assert(auth.length > 0 && auth.every((a) => a === "Bearer hf_test"), `token header: ${auth}`);

    Deno.env.set("HF_ENDPOINT", endpoint);
    const cfg = parseConfig({ model: { hub: "Qwen/tiny" }, env: { id: "plan_path_v1" } });
    const base = await loadBase(cfg);
    assertEquals(base.weights.data.length, weights.data.length);
    assertEquals(
      base.tokenizer.encodeChat([{ role: "user", content: "hi" }], { addGenerationPrompt: true }),
      tok.encodeChat([{ role: "user", content: "hi" }], { addGenerationPrompt: true }),
    );
    const missing = parseConfig({ model: { hub: "Qwen/absent" }, env: { id: "plan_path_v1" } });
    let err: Error | null = null;
    await loadBase(missing).catch((e) => (err = e));
    assert(
      err !== null && /config\.json/.test((err as Error).message),
      `a missing repository names the file: ${err}`,
    );
  } finally {
    Deno.env.delete("HF_ENDPOINT");
    await server.shutdown();
  }
});

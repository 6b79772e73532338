// The chat path's tokens against Python transformers: every task's chat prompts (and multi-turn
// conversations that take the chat templates' other branches) rendered by Qwen2.5's and Qwen3's
// real chat templates and tokenized through transformers.js (the project's loadTokenizer) give
// exactly the text and ids that transformers' apply_chat_template gives (recorded by
// test/fixtures/chat_golden.py), and plain texts encode and decode the same.

import { assert, assertEquals } from "../assert.ts";
import type { ChatMessage } from "../../src/model/tokenizer.ts";
import { chatProbes } from "../fixtures/chat_probes.ts";
import { qwenTokenizer, type ReducedModel } from "./hf_chat_fixtures.ts";

interface ChatGolden {
  tokenizer_class: string;
  transformers_version: string;
  conversations: { name: string; messages: ChatMessage[]; text: string; ids: number[] }[];
  texts: { text: string; ids: number[]; decoded: string; decoded_skip_special: string }[];
}

const GOLDEN: Record<string, ReducedModel> = { "qwen2.5": "qwen2.5-0.5b", "qwen3": "qwen3-0.6b" };
const dir = new URL("../fixtures/chat-golden/", import.meta.url);

Deno.test("chat-golden/probes.json is what chat_probes.ts makes today", async () => {
  const probes = chatProbes();
  assertEquals(
    JSON.parse(await Deno.readTextFile(new URL("probes.json", dir))),
    JSON.parse(JSON.stringify(probes)),
    "stale: run deno run -A test/fixtures/make_fixtures.ts, then chat_golden.py",
  );
  assert(probes.conversations.length >= 18, "every task's prompts");
});

for (const [file, model] of Object.entries(GOLDEN)) {
  Deno.test(`${model}: chat prompts and texts tokenize as Python transformers' apply_chat_template / encode`, async () => {
    const golden = JSON.parse(
      await Deno.readTextFile(new URL(`${file}.json`, dir)),
    ) as ChatGolden;
    const probes = chatProbes();
    assertEquals(
      golden.conversations.map((c) => c.messages),
      probes.conversations.map((c) => c.messages),
      `${file}.json is stale: run chat_golden.py`,
    );
    const tok = await qwenTokenizer(model);
    let tokens = 0;
    for (const c of golden.conversations) {
      const text = tok.applyChatTemplate(c.messages, { addGenerationPrompt: true });
      assertEquals(text, c.text, `${c.name}: rendered text`);
      assertEquals(
        tok.encodeChat(c.messages, { addGenerationPrompt: true }),
        c.ids,
        `${c.name}: ids`,
      );
      tokens += c.ids.length;
    }
    assert(tokens > 3000, `${tokens} tokens: real prompts`);
    for (const t of golden.texts) {
      assertEquals(tok.encode(t.text, { addSpecialTokens: false }), t.ids, JSON.stringify(t.text));
      assertEquals(tok.decode(t.ids), t.decoded, `decode ${JSON.stringify(t.text)}`);
      assertEquals(
        tok.decode(t.ids, { skipSpecialTokens: true }),
        t.decoded_skip_special,
        `decode, skipping specials, ${JSON.stringify(t.text)}`,
      );
    }
  });
}

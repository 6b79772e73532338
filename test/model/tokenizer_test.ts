// Tokenizers: the byte tokenizer (ids, round trips, ChatML), its HF export giving identical
// results through transformers.js, and the shipped tiny BPE fixture with its chat template.

import assert from "node:assert/strict";
import { memoryFolder } from "../../src/io/bytesource.ts";
import { denoFolder } from "../../src/io/deno_files.ts";
import type { ModelConfig } from "../../src/model/config.ts";
import { TokenizerError } from "../../src/model/errors.ts";
import {
  BYTE_VOCAB_SIZE,
  ByteTokenizer,
  byteTokenizerFiles,
  type ChatMessage,
  loadTokenizer,
  type Tokenizer,
} from "../../src/model/tokenizer.ts";
import { tinyBpeFiles } from "../fixtures/make_fixtures.ts";

const bt = new ByteTokenizer();
const enc = new TextEncoder();
const asFolder = (files: Map<string, string>, name = "mem") =>
  memoryFolder(new Map([...files].map(([k, v]) => [k, enc.encode(v)])), name);
const CHAT: ChatMessage[] = [
  { role: "system", content: "Play tic-tac-toe." },
  { role: "user", content: "Board:\n...\nYour move?" },
  { role: "assistant", content: "(1, 1)" },
];
const STRINGS = [
  "",
  "hello world",
  "  two  spaces\tand\ttabs\n",
  "héllo ☃ 🦀 日本語",
  "<bos>x<|im_end|>y<eos>",
  "<|im_start|>user\nhi<|im_end|>\n",
  "not <special> <|im_start",
  "\u0000\u007f\u00ad",
];

Deno.test("byte tokenizer: ids are UTF-8 bytes, specials 256..263, vocab 264", () => {
  assert.equal(BYTE_VOCAB_SIZE, 264);
  assert.deepEqual(bt.encode("Hi é"), [72, 105, 32, 0xc3, 0xa9]);
  assert.deepEqual(bt.encode("a<eos>b", { addSpecialTokens: true }), [257, 97, 258, 98]);
  assert.deepEqual(
    [bt.padId, bt.bosId, bt.eosId, bt.imStartId, bt.imEndId, bt.stopIds],
    [256, 257, 258, 259, 260, [258, 260]],
  );
  assert.deepEqual(bt.encode("<|reserved_2|><pad>"), [263, 256]);
});

Deno.test("byte tokenizer: decode(encode(s)) = s; skipping specials; invalid UTF-8 → U+FFFD", () => {
  for (const s of STRINGS) assert.equal(bt.decode(bt.encode(s)), s, JSON.stringify(s));
  assert.equal(bt.decode(bt.encode("<bos>a<|im_end|>b"), { skipSpecialTokens: true }), "ab");
  // a multi-byte character split by a special token is not glued back together, unless the
  // special is skipped (HF drops skipped tokens before decoding the bytes)
  assert.equal(bt.decode([0xe2, 0x98, 258, 0x83]), "\ufffd<eos>\ufffd");
  assert.equal(bt.decode([0xe2, 0x98, 258, 0x83], { skipSpecialTokens: true }), "☃");
  assert.equal(bt.decode(Uint32Array.from(bt.encode("typed"))), "typed");
  assert.throws(() => bt.decode([264]), TokenizerError);
  assert.throws(() => bt.decode([-1]), TokenizerError);
});

Deno.test("byte tokenizer: ChatML chat template", () => {
  const text = bt.applyChatTemplate(CHAT.slice(0, 2), { addGenerationPrompt: true });
  assert.equal(
    text,
    "<bos><|im_start|>system\nPlay tic-tac-toe.<|im_end|>\n<|im_start|>user\nBoard:\n...\n" +
      "Your move?<|im_end|>\n<|im_start|>assistant\n",
  );
  const ids = bt.encodeChat(CHAT.slice(0, 1));
  assert.deepEqual(ids.slice(0, 2), [257, 259]);
  assert.deepEqual(ids.slice(-2), [260, 10]);
  assert.equal(bt.decode(ids), bt.applyChatTemplate(CHAT.slice(0, 1)));
});

Deno.test("byte tokenizer exported as HF files behaves identically through transformers.js", async () => {
  const folder = asFolder(byteTokenizerFiles());
  assert.equal((await loadTokenizer(folder)).kind, "byte");
  const hf = await loadTokenizer(folder, { forceHF: true });
  assert.equal(hf.kind, "hf");
  assert.deepEqual([hf.vocabSize, hf.bosId, hf.eosId, hf.padId], [264, 257, 258, 256]);
  for (const s of STRINGS) {
    assert.deepEqual(hf.encode(s), bt.encode(s), JSON.stringify(s));
    assert.equal(hf.decode(bt.encode(s)), s);
  }
  for (const addGenerationPrompt of [false, true]) {
    assert.equal(
      hf.applyChatTemplate(CHAT, { addGenerationPrompt }),
      bt.applyChatTemplate(CHAT, { addGenerationPrompt }),
    );
    assert.deepEqual(
      hf.encodeChat(CHAT, { addGenerationPrompt }),
      bt.encodeChat(CHAT, { addGenerationPrompt }),
    );
  }
  const bad = [0xe2, 0x98, 258, 0x83, 0xff];
  assert.equal(hf.decode(bad), bt.decode(bad));
  assert.equal(
    hf.decode(bad, { skipSpecialTokens: true }),
    bt.decode(bad, { skipSpecialTokens: true }),
  );
});

const BPE_DIR = new URL("../fixtures/tiny-bpe", import.meta.url).pathname;

Deno.test("shipped tiny-bpe fixture is what make_fixtures.ts generates", async () => {
  for (const [name, text] of tinyBpeFiles()) {
    // compared as JSON, so reformatting the shipped files does not matter
    assert.deepEqual(
      JSON.parse(await Deno.readTextFile(`${BPE_DIR}/${name}`)),
      JSON.parse(text),
      name,
    );
  }
});

Deno.test("HF tokenizer from the tiny-bpe folder: exact BPE merges and special tokens", async () => {
  const t: Tokenizer = await loadTokenizer(denoFolder(BPE_DIR));
  assert.equal(t.kind, "hf");
  // ids: bytes 0..255, merges 256..264 (Ġw he ll hell hello or Ġwor Ġworl Ġworld), specials 265..267
  assert.deepEqual([t.vocabSize, t.bosId, t.eosId, t.padId, t.stopIds], [268, null, 267, 265, [
    267,
  ]]);
  assert.deepEqual(t.encode("hello world!"), [260, 264, 33]);
  assert.deepEqual(t.encode("help"), [257, 108, 112]); // "he" merges, "l p" do not
  assert.deepEqual(t.encode("hello  world"), [260, 32, 264]); // GPT-2 regex keeps " world"
  assert.deepEqual(t.encode("<|im_start|>hello<|im_end|>"), [266, 260, 267]);
  assert.equal(t.decode([260, 264, 33]), "hello world!");
  assert.equal(t.decode([266, 260, 267], { skipSpecialTokens: true }), "hello");
});

Deno.test("HF tokenizer chat template (ChatML) renders and encodes", async () => {
  const t = await loadTokenizer(denoFolder(BPE_DIR));
  const msgs = [{ role: "user", content: "hello world" }];
  const text = t.applyChatTemplate(msgs, { addGenerationPrompt: true });
  assert.equal(text, "<|im_start|>user\nhello world<|im_end|>\n<|im_start|>assistant\n");
  const ids = t.encodeChat(msgs, { addGenerationPrompt: true });
  assert.deepEqual(ids.slice(0, 9), [266, 117, 115, 101, 114, 10, 260, 264, 267]);
  assert.equal(t.decode(ids), text);
  assert.equal(t.applyChatTemplate(msgs), "<|im_start|>user\nhello world<|im_end|>\n");
});

Deno.test("loadTokenizer: config eos list joins stop ids; chat_template.jinja; missing files", async () => {
  const files = tinyBpeFiles();
  const cfg = JSON.parse(files.get("tokenizer_config.json")!);
  delete cfg.chat_template;
  const noTemplate = new Map(files).set("tokenizer_config.json", JSON.stringify(cfg));
  const plain = await loadTokenizer(asFolder(noTemplate));
  assert.throws(() => plain.applyChatTemplate([{ role: "user", content: "x" }]), TokenizerError);
  const jinja = new Map(noTemplate).set("chat_template.jinja", "{{ messages[0]['content'] }}!")
    .set("generation_config.json", JSON.stringify({ eos_token_id: [265, 267] }));
  const t = await loadTokenizer(asFolder(jinja));
  assert.equal(t.applyChatTemplate([{ role: "user", content: "hey" }]), "hey!");
  assert.deepEqual([...t.stopIds].sort(), [265, 267]);
  const withConfig = await loadTokenizer(asFolder(files), {
    config: { eosTokenIds: [265] } as unknown as ModelConfig,
  });
  assert.deepEqual([...withConfig.stopIds].sort(), [265, 267]);
  await assert.rejects(
    loadTokenizer(asFolder(new Map(), "nothing")),
    /nothing has no tokenizer.json/,
  );
  const broken = new Map(files).set("tokenizer.json", "{");
  await assert.rejects(loadTokenizer(asFolder(broken, "b")), TokenizerError);
});

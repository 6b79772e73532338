// The train CLI's heartbeat: a phase that lasts says so, with the tokens generated in it.

import { assert, assertEquals } from "../assert.ts";
import { phaseHeartbeat } from "../../src/rl/train.ts";
import type { RlSession, SessionPhase } from "../../src/rl/session.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("phaseHeartbeat: lines while a phase lasts, tokens counted from its start, nothing after stop", async () => {
  let tokens = 1000;
  const seen: SessionPhase[] = [];
  const s = {
    step: 0,
    onPhase: (p: SessionPhase) => void seen.push(p),
    generatedTokens: () => tokens,
  };
  const before = s.onPhase;
  const lines: string[] = [];
  const stop = phaseHeartbeat(s as unknown as RlSession, (l) => lines.push(l), 40);
  await sleep(100);
  assertEquals(lines, [], "no phase yet: silent");
  s.onPhase!("validate");
  tokens += 512;
  await sleep(130);
  assert(lines.length >= 1, `${lines}`);
  assert(
    /^step 0 validation: \d+ min \d+ s so far, 512 tokens generated \(\d+ tok\/s\)$/.test(lines[0]),
    lines[0],
  );
  s.step = 3;
  s.onPhase!("update");
  const n = lines.length;
  await sleep(130);
  const upd = lines.slice(n);
  assert(
    upd.length >= 1 && upd.every((l) => /^step 4 update: \d+ min \d+ s so far$/.test(l)),
    `${upd}`,
  );
  assertEquals(seen, ["validate", "update"], "the previous listener still hears every phase");
  stop();
  assertEquals(s.onPhase, before, "stop restores the previous listener");
  const m = lines.length;
  await sleep(100);
  assertEquals(lines.length, m, "nothing after stop");
});

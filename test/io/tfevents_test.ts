// TensorBoard event files: what src/io/tfevents.ts writes, read back by an independent reader
// (test/io/tfevents_reader.ts: its own CRC32C, framing and protobuf wire decoding), and the
// metric lines flattened to scalar tags.

import { assert, assertEquals, assertThrows } from "../assert.ts";
import {
  crc32c,
  eventRecord,
  eventsFileName,
  fileVersionRecord,
  maskedCrc32c,
} from "../../src/io/tfevents.ts";
import { metricScalars } from "../../src/rl/metric_scalars.ts";
import { crc32cBitwise, mask, readEventsFile } from "./tfevents_reader.ts";

const enc = new TextEncoder();
const concat = (parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) (out.set(p, o), o += p.length);
  return out;
};

Deno.test("CRC32C: the standard check value, and the writer's table agrees with a bitwise one", () => {
  // The CRC-32C check value of "123456789" (RFC 3720 / the CRC catalogue).
  assertEquals(crc32cBitwise(enc.encode("123456789")), 0xe3069283);
  assertEquals(crc32c(enc.encode("123456789")), 0xe3069283);
  // iSCSI test vector: 32 zero bytes.
  assertEquals(crc32cBitwise(new Uint8Array(32)), 0x8a9136aa);
  for (const s of ["", "a", "brain.Event:2", "x".repeat(1000)]) {
    assertEquals(maskedCrc32c(enc.encode(s)), mask(crc32cBitwise(enc.encode(s))), s);
  }
});

Deno.test("tfevents: file version, scalars, steps and a session start read back independently", () => {
  const scalars = {
    "reward/mean": 1.25,
    "eval/successRate": 0.5,
    "update/loss": -3e-9,
    "train/nan": NaN,
  };
  const file = concat([
    fileVersionRecord(1_700_000_000.5),
    eventRecord({ wallTime: 1_700_000_001, step: 1, scalars }),
    eventRecord({ wallTime: 1_700_000_002, step: 2 ** 40 + 3, scalars: { "a/b": 7 } }),
    eventRecord({ wallTime: 1_700_000_003, step: 5, sessionStart: true }),
  ]);
  const ev = readEventsFile(file);
  assertEquals(ev.length, 4);
  assertEquals(ev[0].fileVersion, "brain.Event:2");
  assertEquals(ev[0].wallTime, 1_700_000_000.5);
  assertEquals(ev[1].step, 1);
  assertEquals(Object.keys(ev[1].scalars), Object.keys(scalars));
  for (const [tag, v] of Object.entries(scalars)) {
    if (Number.isNaN(v)) assert(Number.isNaN(ev[1].scalars[tag]), tag);
    else assertEquals(ev[1].scalars[tag], Math.fround(v), tag);
  }
  assertEquals([ev[2].step, ev[2].scalars], [2 ** 40 + 3, { "a/b": 7 }]);
  assertEquals([ev[3].step, ev[3].sessionStatus], [5, 1]);
  // The CRCs are checked: one flipped bit anywhere is found.
  for (const at of [3, 10, 20, file.length - 2]) {
    const bad = file.slice();
    bad[at] ^= 4;
    assertThrows(() => readEventsFile(bad));
  }
  assertThrows(() => readEventsFile(file.subarray(0, file.length - 1)), "Error", "cut");
  assert(
    /^events\.out\.tfevents\.1700000000\.host\.42\.0$/.test(
      eventsFileName(1_700_000_000.9, "host", 42),
    ),
  );
});

Deno.test("metricScalars: numbers of a metrics line as reward/, update/, eval/, seconds/ and train/ tags", () => {
  const line = {
    step: 3,
    trainSuccess: 0.25,
    reward: 1.5,
    rewardByAgent: { tool: { "0": 3 }, plan: { "0": -1, "1": 0 } },
    idlePolicies: ["x"],
    updates: [
      { trainer: "tool", loss: 1, gradNorm: 2, finite: true },
      { trainer: "tool", loss: 3, gradNorm: 2, finite: true },
      { trainer: "plan", loss: 5, gradNorm: 8, finite: false },
    ],
    seconds: { rollout: 2, update: 1 },
    checkpoint: { name: "step-3", requestedBy: "SIGUSR2" },
    eval: {
      episodes: 4,
      successRate: 0.75,
      rewardByAgent: { plan: 0.5 },
      split: "test",
      successes: [1, 0, 1, 1],
      samples: [{ a: 1 }],
    },
  };
  assertEquals(metricScalars(line), {
    "train/trainSuccess": 0.25,
    "reward/mean": 1.5,
    "reward/tool": 3,
    "reward/tool/turn0": 3,
    "reward/plan": -0.5,
    "reward/plan/turn0": -1,
    "reward/plan/turn1": 0,
    "update/loss": 3,
    "update/gradNorm": 4,
    "update/tool/loss": 2,
    "update/tool/gradNorm": 2,
    "update/plan/loss": 5,
    "update/plan/gradNorm": 8,
    "seconds/rollout": 2,
    "seconds/update": 1,
    "eval/episodes": 4,
    "eval/successRate": 0.75,
    "eval/reward/plan": 0.5,
  });
  assertEquals(metricScalars({ step: 0, eval: { successRate: 0, rewardByAgent: {} } }), {
    "eval/successRate": 0,
  });
  // PPO's critic: value-loss fields among the updates, explained variance per trainer (null: left out).
  assertEquals(
    metricScalars({
      step: 1,
      updates: [{ trainer: "shared", valueLoss: 0.5, valueClipFrac: 0.25 }, {
        trainer: "shared",
        valueLoss: 0.25,
        valueClipFrac: 0,
      }],
      critic: {
        shared: { explainedVariance: 0.5, valueMean: 1, returnMean: 2, tokens: 7 },
        other: { explainedVariance: null },
      },
    }),
    {
      "update/valueLoss": 0.375,
      "update/valueClipFrac": 0.125,
      "update/shared/valueLoss": 0.375,
      "update/shared/valueClipFrac": 0.125,
      "train/critic/shared/explainedVariance": 0.5,
      "train/critic/shared/valueMean": 1,
      "train/critic/shared/returnMean": 2,
      "train/critic/shared/tokens": 7,
    },
  );
});

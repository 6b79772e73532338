// A picks-file entry for the adapter a test runs on (this build's kernel set, no matmul picks)
// with the tuner fields given: what the tuner tests register with useTunedPicks.

import type { AdapterDescription } from "../../src/gpu/device.ts";
import { adapterKey, kernelSetId, type TunedPicksEntry } from "../../src/ops/tuned_picks.ts";

export function entryFor(
  info: AdapterDescription,
  fields: Partial<TunedPicksEntry> = {},
): TunedPicksEntry {
  return {
    adapter: adapterKey(info),
    kernels: kernelSetId(),
    picks: {},
    tunedFor: "test",
    date: "2026-11-28T00:00:00.000Z",
    ...fields,
  };
}

/** An entry of another adapter ("gpu: test"), for the picks-file tests that need no device. */
export const OTHER_ADAPTER_ENTRY: TunedPicksEntry = {
  adapter: "gpu: test",
  kernels: kernelSetId(),
  picks: {},
  tunedFor: "a",
  date: "2026-11-28T00:00:00.000Z",
};

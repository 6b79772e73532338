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

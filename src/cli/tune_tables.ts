// The tables `npx deno task tune` prints of the kernel tuners besides the matmuls'
// (src/train/kernel_tuners.ts): each candidate's time, the built-in and the tuned pick marked.

import {
  describeAttentionSplit,
  describeSamplerPick,
  type SamplerPick,
} from "../ops/tuned_picks.ts";
import type { KernelTunersResult } from "../train/kernel_tuners.ts";

/** " (built-in) (tuned)" as the candidate is either. */
const marks = (builtIn: boolean, tuned: boolean) =>
  [builtIn && "built-in", tuned && "tuned"].filter(Boolean).map((w) => ` (${w})`).join("");

/** Markdown tables of what each tuner timed, and the candidates it refused. */
export function tunerTables(t: KernelTunersResult): string[] {
  const L: string[] = [];
  const { sampler, lora, attention, loss } = t;
  if (sampler) {
    L.push("\n| workgroups a row | threads a workgroup | ms a step |");
    L.push("|---|---|---|");
    const same = (a: SamplerPick, b: SamplerPick) =>
      a.rowChunks === b.rowChunks && a.workgroupSize === b.workgroupSize;
    for (const t of sampler.times) {
      L.push(
        `| ${t.rowChunks}${
          marks(same(t, sampler.current), same(t, sampler.best))
        } | ${t.workgroupSize} | ${t.ms.toFixed(3)}${t.final ? "" : " (screening)"} |`,
      );
    }
    for (const x of sampler.refused) {
      L.push(
        `refused ${describeSamplerPick(x)} (wrong against the float64 reference): ${x.why}`,
      );
    }
  }
  if (lora) {
    L.push("\n| fused LoRA: workgroups a dispatch | ms a step |");
    L.push("|---|---|");
    for (const t of lora.times) {
      L.push(
        `| ${t.target}${marks(t.target === lora.current, t.target === lora.best)} | ${
          t.ms.toFixed(3)
        }${t.final ? "" : " (screening)"} |`,
      );
    }
    if (lora.same.length) {
      L.push(
        `the same column split as another: ${
          lora.same.map((x) => `${x.target} as ${x.as}`).join(", ")
        }`,
      );
    }
    for (const x of lora.refused) {
      L.push(
        `refused fused LoRA target ${x.target} (wrong against the float64 reference): ${x.why}`,
      );
    }
  }
  if (attention) {
    L.push(
      `\n| decode attention at ${attention.context} positions: rows | rows × heads | one workgroup per (head, row) ms | ${
        attention.spans.map((s) => `split ${s.span} ms`).join(" | ")
      } |`,
    );
    L.push(`|---|---|---|${attention.spans.map(() => "---|").join("")}`);
    attention.calls.forEach((c, i) => {
      L.push(
        `| ${c.rows} | ${c.rowHeads} | ${c.unsplitMs.toFixed(3)} | ${
          attention.spans.map((s) => s.splitMs[i].toFixed(3)).join(" | ")
        } |`,
      );
    });
    L.push(
      `built-in: ${describeAttentionSplit(attention.current)}; tuned: ${
        describeAttentionSplit(attention.best)
      }`,
    );
    for (const x of attention.refused) {
      L.push(
        `refused the split of ${x.span} positions (wrong against the float64 reference): ${x.why}`,
      );
    }
  }
  if (loss) {
    L.push("\n| loss head: lanes a row | ms a call |");
    L.push("|---|---|");
    for (const t of loss.times) {
      L.push(
        `| ${t.workgroupSize}${
          marks(t.workgroupSize === loss.current, t.workgroupSize === loss.best)
        } | ${t.ms.toFixed(3)}${t.final ? "" : " (screening)"} |`,
      );
    }
    for (const x of loss.refused) {
      L.push(
        `refused ${x.workgroupSize} lanes a row (wrong against the float64 reference): ${x.why}`,
      );
    }
  }
  return L;
}

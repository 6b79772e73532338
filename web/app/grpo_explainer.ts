// The GRPO explainer on a real group of the latest step: the K rewards, their mean and std, the
// advantages A = (r − mean)/(std + ε), and what the PPO-clip update does with them: every token
// of a candidate shares its advantage, so tokens of better-than-average candidates are pushed up
// and the others down (token-mean: each token weighs 1/N of the batch). "Measure" scores the same
// tokens under the current policy, after the update, and shows Δ log p per token.

import type { CandidateView, EpisodeView, FrameView } from "../../src/browser/rollout_view.ts";
import { advantageBar, fmt } from "./rollout_viewer.ts";

type Measure = (
  agent: string,
  seqs: { promptIds: number[]; completionIds: number[] }[],
) => Promise<number[][]>;

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

export class GrpoExplainer {
  private groups: { label: string; frame: FrameView; step: number }[] = [];
  private readonly sel: HTMLSelectElement;
  private readonly body: HTMLElement;
  private temperature = 1;

  constructor(root: HTMLElement, private readonly measure: Measure) {
    root.innerHTML =
      `<p class="muted">A group is the K candidates one agent produced for one environment and turn.
      GRPO compares them with each other: no value network, just the group's own mean and spread.</p>
      <div class="row"><label>Group <select class="gx-group"></select></label>
      <button type="button" class="gx-measure small">Measure Δ log p under the current policy</button></div>
      <div class="gx-body"><p class="muted">Groups appear after the first training step.</p></div>`;
    this.sel = root.querySelector(".gx-group")!;
    this.body = root.querySelector(".gx-body")!;
    this.sel.addEventListener("change", () => this.render());
    root.querySelector<HTMLButtonElement>(".gx-measure")!.addEventListener(
      "click",
      () => void this.runMeasure(),
    );
  }

  setTemperature(t: number) {
    this.temperature = t;
  }

  /** The groups of a new step; the one with the widest reward spread is shown first. */
  update(episodes: EpisodeView[]) {
    const groups = episodes.flatMap((ep) =>
      ep.frames.map((f) => ({
        label: `step ${ep.step} · env ${ep.env} · turn ${f.turn + 1} · ${f.agent} (std ${
          f.std.toFixed(2)
        })`,
        frame: f,
        step: ep.step,
      }))
    );
    if (!groups.length) return;
    groups.sort((a, b) => b.frame.std - a.frame.std);
    this.groups = groups;
    this.sel.replaceChildren(...groups.map((g, i) => new Option(g.label, String(i))));
    this.render();
  }

  private current() {
    return this.groups[Number(this.sel.value) || 0];
  }

  private render(deltas?: number[][]) {
    const g = this.current();
    if (!g) return;
    const f = g.frame, K = f.candidates.length;
    const box = el("div");
    const math = el("div", "gx-math");
    const rs = f.candidates.map((c) => c.reward);
    math.append(
      el(
        "div",
        "",
        `rewards r = [${rs.map((r) => r.toFixed(2)).join(", ")}]   (r = α·team + local)`,
      ),
      el("div", "", `mean = ${f.mean.toFixed(3)}   std = ${f.std.toFixed(3)} (unbiased, n − 1)`),
      el(
        "div",
        "",
        f.zeroVariance
          ? "all rewards are equal: every advantage is 0 and this group teaches nothing"
          : `A_i = (r_i − mean) / (std + ε) = [${
            f.candidates.map((c) => c.advantage.toFixed(2)).join(", ")
          }]`,
      ),
      el(
        "div",
        "muted",
        `Each token of candidate i gets A_i. The loss is −mean over tokens of min(ρ·A, clip(ρ, 1−ε, 1+ε)·A) with ρ = π/π_old, so A > 0 raises the log-probability of that candidate's tokens and A < 0 lowers it. ${K} candidates, ${
          f.candidates.reduce((s, c) => s + c.tokens.length, 0)
        } tokens.`,
      ),
    );
    box.append(math);
    f.candidates.forEach((c, i) => box.append(this.candidate(c, deltas?.[i])));
    if (deltas) box.append(this.summary(f.candidates, deltas));
    this.body.replaceChildren(box);
  }

  private candidate(c: CandidateView, delta?: number[]): HTMLElement {
    const row = el("div", `gx-cand ${c.chosen ? "chosen" : ""}`);
    const head = el("div", "gx-head");
    head.append(
      el("b", "", `#${c.candidate}`),
      el("span", "", ` r ${fmt(c.reward)}  A ${fmt(c.advantage)} `),
      advantageBar(c.advantage),
      el(
        "span",
        "muted",
        c.advantage > 0 ? " pushed up" : c.advantage < 0 ? " pushed down" : " untouched",
      ),
    );
    const toks = el("div", "tokens mono");
    c.tokens.forEach((t, j) => {
      // Special tokens (<eos>, <|im_end|>) are trained like any other: shown as a marker, named in the tooltip.
      const special = /^<\|?[a-z_]+\|?>$/i.test(t);
      const s = el("span", special ? "tok special" : "tok", t === "\n" ? "⏎" : special ? "∎" : t);
      const d = delta?.[j];
      const v = d ?? c.advantage; // colour: measured Δ log p, else the direction A gives it
      const a = Math.min(1, Math.abs(v) * (d !== undefined ? 4 : 0.5));
      s.style.background = v >= 0 ? `rgba(22,163,74,${a})` : `rgba(220,38,38,${a})`;
      s.title = `${special ? `special token ${t} · ` : ""}token ${c.completionIds[j]} · old log p ${
        c.oldLogp[j]?.toFixed(3)
      }${d !== undefined ? ` · Δ log p ${fmt(d, 3)}` : ""}`;
      toks.append(s);
    });
    row.append(head, toks);
    return row;
  }

  private summary(cands: CandidateView[], deltas: number[][]): HTMLElement {
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
    const up = cands.flatMap((c, i) => (c.advantage > 0 ? deltas[i] : []));
    const down = cands.flatMap((c, i) => (c.advantage < 0 ? deltas[i] : []));
    return el(
      "div",
      "gx-summary",
      `measured after the update: mean Δ log p of tokens with A > 0: ${
        fmt(mean(up), 4)
      }; with A < 0: ${fmt(mean(down), 4)}` +
        (this.temperature !== 1
          ? ` (rollouts sampled at T = ${this.temperature}, so old log p were at that temperature: compare signs, not sizes)`
          : "") +
        ". Later steps' updates are included if training went on.",
    );
  }

  private async runMeasure() {
    const g = this.current();
    if (!g) return;
    const f = g.frame;
    this.body.prepend(el("p", "muted", "measuring (waits for the current training step to end)…"));
    try {
      const now = await this.measure(
        f.agent,
        f.candidates.map((c) => ({ promptIds: c.promptIds, completionIds: c.completionIds })),
      );
      const deltas = now.map((lp, i) => lp.map((v, j) => v - f.candidates[i].oldLogp[j]));
      this.render(deltas);
    } catch (e) {
      this.body.prepend(el("p", "error", `${(e as Error).name}: ${(e as Error).message}`));
    }
  }
}

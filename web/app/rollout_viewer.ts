// The rollout viewer: for a step and an environment, the board before each (turn, agent) move,
// animated turn by turn; the agent's chosen message; the K candidates of the group with rewards
// (team, local) and advantages; which branch the tree continued from; in tool → plan tasks, the
// tool's printed output handed to the plan agent. A new step opens on its most informative group
// (the widest reward spread), not on the first one. Turns are counted from 1, as on the boards.

import {
  type EpisodeView,
  type FrameView,
  mostInformative,
} from "../../src/browser/rollout_view.ts";
import { renderBoard } from "./boards.ts";

const KEEP_STEPS = 30;

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

export const fmt = (
  x: number,
  d = 2,
) => (Number.isFinite(x) ? (x >= 0 ? "+" : "") + x.toFixed(d) : String(x));

/** A bar centred on 0 for an advantage (green up, red down). */
export function advantageBar(a: number): HTMLElement {
  const bar = el("span", "advbar");
  const fill = el("span", a >= 0 ? "pos" : "neg");
  fill.style.width = `${Math.min(50, Math.abs(a) * 25)}%`;
  bar.append(fill);
  return bar;
}

export class RolloutViewer {
  readonly steps = new Map<number, EpisodeView[]>();
  private step = -1;
  private env = 0;
  private frame = 0;
  private timer: number | null = null;
  private readonly stepSel: HTMLSelectElement;
  private readonly envSel: HTMLSelectElement;
  private readonly slider: HTMLInputElement;
  private readonly playBtn: HTMLButtonElement;
  private readonly body: HTMLElement;
  /** Follow the newest step as it arrives (off once the user picks a step). */
  private follow = true;
  onGroups?: (episodes: EpisodeView[]) => void;

  constructor(root: HTMLElement) {
    root.innerHTML = `<div class="row controls">
        <label>Step <select class="rv-step"></select></label>
        <label>Environment <select class="rv-env"></select></label>
        <button type="button" class="rv-play small">▶ Play</button>
        <label class="rv-frame-label">Move <input type="range" class="rv-frame" min="0" max="0" value="0" aria-label="Move in the episode"></label>
        <span class="rv-pos" aria-live="polite"></span>
      </div><div class="rv-body"><p class="muted">Rollouts appear here after the first training step.</p></div>`;
    this.stepSel = root.querySelector(".rv-step")!;
    this.envSel = root.querySelector(".rv-env")!;
    this.slider = root.querySelector(".rv-frame")!;
    this.playBtn = root.querySelector(".rv-play")!;
    this.body = root.querySelector(".rv-body")!;
    this.stepSel.addEventListener("change", () => {
      this.follow = this.stepSel.selectedIndex === 0;
      this.showBest(Number(this.stepSel.value));
    });
    this.envSel.addEventListener(
      "change",
      () => this.show(this.step, Number(this.envSel.value), 0),
    );
    this.slider.addEventListener(
      "input",
      () => this.show(this.step, this.env, Number(this.slider.value)),
    );
    this.playBtn.addEventListener(
      "click",
      () => (this.timer === null ? this.play() : this.stopPlay()),
    );
  }

  clear() {
    this.steps.clear();
    this.step = -1;
    this.stepSel.replaceChildren();
    this.body.replaceChildren(
      el("p", "muted", "Rollouts appear here after the first training step."),
    );
  }

  add(step: number, episodes: EpisodeView[]) {
    if (!episodes.length) return;
    this.steps.set(step, episodes);
    for (
      const k of [...this.steps.keys()].sort((a, b) => a - b).slice(
        0,
        Math.max(0, this.steps.size - KEEP_STEPS),
      )
    ) this.steps.delete(k);
    const keys = [...this.steps.keys()].sort((a, b) => b - a);
    this.stepSel.replaceChildren(...keys.map((k) => new Option(`step ${k}`, String(k))));
    if (this.follow || this.step < 0) this.showBest(step);
    else this.stepSel.value = String(this.step);
    this.onGroups?.(episodes);
  }

  /** A step opened on its most informative group. */
  showBest(step: number) {
    const eps = this.steps.get(step);
    if (!eps) return;
    const at = mostInformative(eps);
    this.show(step, at.env, at.frame);
  }

  private play() {
    this.playBtn.textContent = "❚❚ Pause";
    this.timer = setInterval(() => {
      const ep = this.steps.get(this.step)?.[this.env];
      if (!ep) return this.stopPlay();
      const next = this.frame + 1 > ep.frames.length ? 0 : this.frame + 1;
      this.show(this.step, this.env, next);
    }, 1200) as unknown as number;
  }

  private stopPlay() {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.playBtn.textContent = "▶ Play";
  }

  /** Frame f of env e at step s; f = frames.length is the final board. */
  show(s: number, e: number, f: number) {
    const eps = this.steps.get(s);
    if (!eps) return;
    this.step = s;
    this.env = e;
    this.stepSel.value = String(s);
    if (this.envSel.options.length !== eps.length || this.envSel.dataset.step !== String(s)) {
      this.envSel.replaceChildren(
        ...eps.map((x) => new Option(`#${x.env} ${x.success ? "✓ solved" : "✗"}`, String(x.env))),
      );
      this.envSel.dataset.step = String(s);
    }
    this.envSel.value = String(e);
    const ep = eps[e];
    this.frame = Math.min(f, ep.frames.length);
    this.slider.max = String(ep.frames.length);
    this.slider.value = String(this.frame);
    this.body.parentElement!.querySelector(".rv-pos")!.textContent = this.frame < ep.frames.length
      ? `move ${this.frame + 1} of ${ep.frames.length}`
      : `final (${ep.success ? "success" : "no success"})`;
    this.body.replaceChildren(
      this.frame < ep.frames.length
        ? this.renderFrame(ep, ep.frames[this.frame])
        : this.renderFinal(ep),
    );
  }

  private renderFinal(ep: EpisodeView): HTMLElement {
    const box = el("div", "frame");
    const left = el("div", "frame-board");
    left.append(
      el("h4", "", `final board — ${ep.success ? "success ✓" : "not solved ✗"}`),
      renderBoard(ep.final),
    );
    const right = el("div", "frame-msgs");
    right.append(el("h4", "", "chosen path"));
    for (const fr of ep.frames) {
      const c = fr.candidates.find((x) => x.chosen) ?? fr.candidates[0];
      const m = el("div", "msg");
      m.append(
        el("b", "", `turn ${fr.turn + 1} · ${fr.agent} (r ${fmt(c.reward)}): `),
        el("span", "mono", c.shown),
      );
      if (fr.toolOutput !== null) {
        m.append(el("div", "handoff-inline mono", `→ printed: ${fr.toolOutput || "(nothing)"}`));
      }
      right.append(m);
    }
    box.append(left, right);
    return box;
  }

  private renderFrame(ep: EpisodeView, fr: FrameView): HTMLElement {
    const box = el("div", "frame");
    const left = el("div", "frame-board");
    left.append(el("h4", "", `turn ${fr.turn + 1} · ${fr.agent} to act`), renderBoard(fr.board));
    const prompt = el("details", "prompt");
    prompt.append(el("summary", "", "prompt the agent saw"), el("pre", "mono", fr.prompt));
    left.append(prompt);
    const right = el("div", "frame-msgs");
    const chosen = fr.candidates.find((c) => c.chosen) ?? fr.candidates[0];
    const msg = el("div", "msg chosen-msg");
    const i = ep.frames.indexOf(fr), before = ep.frames[i - 1];
    if (before?.toolOutput != null) right.append(this.handoff(before, fr, "in"));
    msg.append(
      el("b", "", `${fr.agent}'s message (branch taken): `),
      el("span", "mono", chosen.shown || "(empty)"),
    );
    right.append(msg);
    if (fr.toolOutput !== null) right.append(this.handoff(fr, ep.frames[i + 1], "out"));
    right.append(
      el(
        "h4",
        "",
        ep.mode === "tree"
          ? `Group (env ${ep.env}, ${fr.agent}, turn ${
            fr.turn + 1
          }): K = ${fr.candidates.length}, mean ${fmt(fr.mean)}, std ${fr.std.toFixed(2)}${
            fr.zeroVariance ? " — all rewards equal: no learning signal" : ""
          }`
          : `trajectories at this turn (independent GRPO: reward = the trajectory's return)`,
      ),
    );
    const table = el("table", "cands");
    const head = el("tr");
    for (const t of ["#", "message", "reward (team / local)", "advantage", ""]) {
      head.append(el("th", "", t));
    }
    table.append(head);
    for (const c of fr.candidates) {
      const tr = el("tr", c.chosen ? "chosen" : "");
      tr.append(el("td", "", String(c.candidate)));
      const td = el("td", "mono cand-text", c.shown || "(empty)");
      if (c.invalid) td.append(el("span", "tag bad", c.invalid));
      tr.append(td);
      tr.append(el("td", "num", `${fmt(c.reward)} (${fmt(c.team, 1)} / ${fmt(c.local, 1)})`));
      const adv = el("td", "num");
      adv.append(el("span", "", fmt(c.advantage)), advantageBar(c.advantage));
      tr.append(adv);
      tr.append(el("td", "", c.chosen ? "branch taken" : ""));
      table.append(tr);
    }
    right.append(table);
    box.append(left, right);
    return box;
  }

  /** The tool → output → plan hand-off: what the tool's chosen program printed, and who reads it. */
  private handoff(tool: FrameView, next: FrameView | undefined, side: "in" | "out"): HTMLElement {
    const box = el("div", "handoff");
    box.append(
      el(
        "div",
        "handoff-title",
        side === "out"
          ? `${tool.agent}'s program ran; it printed${
            next ? ` (${next.agent} reads this as "Tool output")` : ""
          }:`
          : `${next?.agent ?? "this agent"} reads the output of ${tool.agent}'s program (turn ${
            tool.turn + 1
          }):`,
      ),
    );
    box.append(el("pre", "mono", tool.toolOutput || "(nothing)"));
    return box;
  }
}

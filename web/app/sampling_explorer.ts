// The sampling explorer on live logits: the current policy's next-token logits for a real
// prompt (a held-out task's observation, or text you type), and what temperature, top-k and
// top-p do to them: the distribution, the tokens each cut removes, the mass removed. The cuts are
// computed with the GPU sampler's float64 reference (same order and tie rules).

import { samplingView } from "../../src/browser/sampling_view.ts";
import type { LogitsRequest, LogitsResult } from "./protocol.ts";

const SHOW = 24;

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

const showTok = (t: string | undefined, id: number) =>
  t === undefined ? `#${id}` : JSON.stringify(t).slice(1, -1) || "∅";

export class SamplingExplorer {
  private res: LogitsResult | null = null;
  private appended: number[] = [];
  private readonly agent: HTMLSelectElement;
  private readonly task: HTMLInputElement;
  private readonly text: HTMLTextAreaElement;
  private readonly T: HTMLInputElement;
  private readonly K: HTMLInputElement;
  private readonly P: HTMLInputElement;
  private readonly out: HTMLElement;
  private readonly promptBox: HTMLElement;
  private readonly status: HTMLElement;

  constructor(
    root: HTMLElement,
    private readonly fetchLogits: (r: LogitsRequest) => Promise<LogitsResult>,
  ) {
    root.innerHTML = `<div class="row">
        <label>agent <select class="se-agent"></select></label>
        <label>held-out task <input class="se-task" type="number" min="0" value="0"></label>
        <button type="button" class="se-load small">Logits for this task's prompt</button>
      </div>
      <div class="row"><label class="wide">or your own prompt <textarea class="se-text" rows="2" spellcheck="false"></textarea></label>
        <button type="button" class="se-load-text small">Logits for this text</button></div>
      <div class="row sliders">
        <label>temperature <input class="se-T" type="range" min="0" max="2" step="0.05" value="1"> <output class="se-Tv">1</output></label>
        <label>top-k <input class="se-K" type="range" min="0" max="64" step="1" value="0"> <output class="se-Kv">off</output></label>
        <label>top-p <input class="se-P" type="range" min="0.05" max="1" step="0.01" value="1"> <output class="se-Pv">off</output></label>
      </div>
      <div class="se-status muted">Load logits after starting or resuming a run.</div>
      <details class="se-prompt-box"><summary>prompt</summary><pre class="mono se-prompt"></pre></details>
      <div class="se-out"></div>
      <div class="row"><button type="button" class="se-append small">Append the most likely token and recompute</button></div>`;
    this.agent = root.querySelector(".se-agent")!;
    this.task = root.querySelector(".se-task")!;
    this.text = root.querySelector(".se-text")!;
    this.T = root.querySelector(".se-T")!;
    this.K = root.querySelector(".se-K")!;
    this.P = root.querySelector(".se-P")!;
    this.out = root.querySelector(".se-out")!;
    this.promptBox = root.querySelector(".se-prompt")!;
    this.status = root.querySelector(".se-status")!;
    root.querySelector(".se-load")!.addEventListener(
      "click",
      () => void this.load({ agent: this.agent.value, task: Number(this.task.value) }, true),
    );
    root.querySelector(".se-load-text")!.addEventListener(
      "click",
      () => void this.load({ agent: this.agent.value, text: this.text.value }, true),
    );
    root.querySelector(".se-append")!.addEventListener("click", () => {
      if (!this.res) return;
      const logits = this.res.logits;
      let best = 0;
      for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
      this.appended.push(best);
      void this.load(this.lastReq!, false);
    });
    for (const s of [this.T, this.K, this.P]) s.addEventListener("input", () => this.render());
  }

  private lastReq: LogitsRequest | null = null;

  setAgents(agents: string[]) {
    const cur = this.agent.value;
    this.agent.replaceChildren(...agents.map((a) => new Option(a, a)));
    if (agents.includes(cur)) this.agent.value = cur;
  }

  private async load(req: LogitsRequest, fresh: boolean) {
    if (fresh) this.appended = [];
    this.lastReq = req;
    this.status.textContent = "computing logits (waits for the current training step to end)…";
    try {
      this.res = await this.fetchLogits({ ...req, appendIds: this.appended });
      this.status.textContent =
        `${this.res.promptIds.length} prompt tokens · policy ${this.res.adapter} · vocabulary ${this.res.logits.length}`;
      this.promptBox.textContent = this.res.prompt;
      this.render();
    } catch (e) {
      this.status.textContent = `${(e as Error).name}: ${(e as Error).message}`;
    }
  }

  private render() {
    const T = Number(this.T.value), K = Number(this.K.value), P = Number(this.P.value);
    this.T.parentElement!.querySelector("output")!.textContent = T === 0
      ? "0 (greedy)"
      : T.toFixed(2);
    this.K.parentElement!.querySelector("output")!.textContent = K === 0 ? "off" : String(K);
    this.P.parentElement!.querySelector("output")!.textContent = P >= 1 ? "off" : P.toFixed(2);
    if (!this.res) return;
    const v = samplingView(this.res.logits, { temperature: T, topK: K, topP: P });
    const list = el("div", "dist");
    const maxP = v.tokens[0]?.p || 1;
    for (const t of v.tokens.slice(0, SHOW)) {
      const row = el("div", `dist-row ${t.cut ? "cut" : "kept"}`);
      row.append(el("span", "mono tokname", showTok(this.res.labels[t.id], t.id)));
      const bar = el("span", "pbar");
      const fill = el("span", "pfill");
      fill.style.width = `${(t.p / maxP) * 100}%`;
      bar.append(fill);
      row.append(
        bar,
        el("span", "num", `${(t.p * 100).toFixed(1)}%`),
        el("span", "num", t.cut ? `cut by ${t.cut}` : `→ ${(t.pKept * 100).toFixed(1)}%`),
      );
      list.append(row);
    }
    const sum = el(
      "div",
      "se-summary",
      `${v.kept} of ${v.tokens.length} tokens can be drawn · the cuts remove ${
        (v.cutMass * 100).toFixed(1)
      }% of the probability mass · entropy of what is sampled: ${v.entropy.toFixed(3)} nats` +
        (v.greedy ? " · temperature 0 is greedy: always the top token" : ""),
    );
    this.out.replaceChildren(sum, list);
  }
}

// Play tic-tac-toe against the current policy (greedy). The game runs in the trainer worker with
// the environment's own rules; the policy's raw message is shown with its move.

import type { TttView } from "./protocol.ts";

export class TicTacToePlay {
  private readonly board: HTMLElement;
  private readonly status: HTMLElement;
  private readonly side: HTMLSelectElement;

  constructor(
    root: HTMLElement,
    private readonly api: {
      tttNew(h: "player_x" | "player_o"): Promise<TttView>;
      tttMove(c: number): Promise<TttView>;
    },
  ) {
    root.innerHTML =
      `<div class="row"><label>You play <select class="ttt-side"><option value="player_x">x (first)</option><option value="player_o">o (second)</option></select></label>
      <button type="button" class="ttt-new small">New game</button></div>
      <div class="ttt-board"></div><div class="ttt-status muted">Start or resume a run, then start a game.</div>`;
    this.board = root.querySelector(".ttt-board")!;
    this.status = root.querySelector(".ttt-status")!;
    this.side = root.querySelector(".ttt-side")!;
    root.querySelector(".ttt-new")!.addEventListener(
      "click",
      () => void this.call(() => this.api.tttNew(this.side.value as "player_x" | "player_o")),
    );
  }

  private async call(fn: () => Promise<TttView>) {
    this.status.textContent =
      "the policy is thinking (waits for the current training step to end)…";
    try {
      this.show(await fn());
    } catch (e) {
      this.status.textContent = `${(e as Error).name}: ${(e as Error).message}`;
    }
  }

  private show(v: TttView) {
    const view = v.board.view;
    if (view.kind !== "grid") return;
    const cells = view.cells.flat();
    this.board.replaceChildren(...cells.map((sym, i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = `ttt-cell ${sym}`;
      b.textContent = sym === "." ? "" : sym;
      b.disabled = sym !== "." || v.over;
      b.addEventListener("click", () => void this.call(() => this.api.tttMove(i)));
      return b;
    }));
    const said = v.lastPolicyText === null
      ? ""
      : ` — the policy wrote ${JSON.stringify(v.lastPolicyText)}${
        v.lastPolicyInvalid ? ` (${v.lastPolicyInvalid})` : ""
      }`;
    this.status.textContent = `${v.result}${said}. ${v.note}`;
  }
}

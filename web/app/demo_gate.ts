// The teaching tools need a loaded policy: until a run has loaded one they are disabled, with the
// reason in words; tic-tac-toe also needs a policy trained on tic-tac-toe (any other task's policy
// forfeits on its first move, which teaches nothing).

import type { Status } from "./protocol.ts";

const TTT_ID = "tic_tac_toe_v1";

export class DemoGate {
  private readonly reason: HTMLElement;
  /** Each tool's own controls as built (later ones, e.g. board cells, manage themselves). */
  private readonly controls = new Map<string, HTMLElement[]>();

  constructor(private readonly root: HTMLElement) {
    this.reason = root.querySelector(".demo-reason")!;
    for (const id of ["#grpo", "#sampling", "#ttt"]) {
      this.controls.set(id, [
        ...root.querySelectorAll<HTMLElement>(
          `${id} button, ${id} input, ${id} select, ${id} textarea`,
        ),
      ]);
    }
    this.update(null);
  }

  update(s: Status | null) {
    const loaded = !!s?.envId;
    this.reason.hidden = loaded;
    for (const id of ["#grpo", "#sampling"]) this.enable(id, loaded, null);
    this.enable(
      "#ttt",
      s?.envId === TTT_ID,
      loaded
        ? `This run trains ${
          s!.envId
        }, not tic-tac-toe: choose the tic-tac-toe task and start a run to play its policy.`
        : "Start a tic-tac-toe run first: you play against its policy.",
    );
  }

  /** `why`: the reason shown in the tool while it is off (null: the section's reason says it). */
  private enable(sel: string, on: boolean, why: string | null) {
    const box = this.root.querySelector<HTMLElement>(sel)!;
    for (const c of this.controls.get(sel)!) (c as HTMLButtonElement).disabled = !on;
    let note = box.querySelector<HTMLElement>(":scope > .gate-note");
    if (!note) {
      note = document.createElement("p");
      note.className = "gate-note muted";
      box.prepend(note);
    }
    note.textContent = on || !why ? "" : why;
    note.hidden = on || !why;
  }
}

// Boards from an env's render(state).view: grids (Plan-Path, Sokoban, Sudoku, tic-tac-toe) as
// cells with a legend, Hanabi as fireworks and hands, Search and text tasks as text.

import type { BoardView, Rendered } from "../../src/envs/types.ts";

const h = <K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

/** CSS class of a grid symbol, so walls, agents, goals, boxes and marks get their colours. */
function cellClass(sym: string): string {
  const map: Record<string, string> = {
    "#": "wall",
    ".": "empty",
    "*": "mark",
    S: "start",
    G: "goal",
    A: "agent",
    P: "agent",
    B: "box",
    x: "x",
    o: "o",
  };
  return map[sym] ?? (/^\d$/.test(sym) ? "digit" : "other");
}

function gridBoard(v: Extract<BoardView, { kind: "grid" }>): HTMLElement {
  const wrap = h("div", "board grid-board");
  const table = h("div", "grid");
  table.style.gridTemplateColumns = `repeat(${v.cells[0]?.length ?? 1}, 1fr)`;
  const hl = new Set((v.highlight ?? []).map(([r, c]) => `${r},${c}`));
  v.cells.forEach((row, r) =>
    row.forEach((sym, c) => {
      const cell = h(
        "div",
        `cell ${cellClass(sym)}${hl.has(`${r},${c}`) ? " hl" : ""}`,
        sym === "." ? "" : sym,
      );
      cell.title = v.legend[sym] ?? sym;
      table.append(cell);
    })
  );
  wrap.append(table);
  if (v.caption) wrap.append(h("div", "caption", v.caption));
  const legend = h("div", "legend");
  for (const [sym, what] of Object.entries(v.legend)) {
    const item = h("span", "legend-item");
    item.append(
      h("span", `cell mini ${cellClass(sym)}`, sym === "." ? "" : sym),
      document.createTextNode(` ${what}`),
    );
    legend.append(item);
  }
  wrap.append(legend);
  return wrap;
}

function hanabiBoard(v: Record<string, unknown>): HTMLElement {
  const wrap = h("div", "board hanabi-board");
  wrap.append(
    h(
      "div",
      "caption",
      `${
        v.status ?? ""
      } · score ${v.score}/${v.maxScore} · hints ${v.hints} · lives ${v.lives} · deck ${v.deck}`,
    ),
  );
  const fw = h("div", "fireworks");
  for (const f of (v.fireworks as { color: string; rank: number }[]) ?? []) {
    const card = h("span", `hcard c-${f.color}`, `${f.color} ${f.rank}`);
    fw.append(card);
  }
  wrap.append(fw);
  ((v.hands as { card: string; knows: string }[][]) ?? []).forEach((hand, i) => {
    const row = h("div", "hand");
    row.append(h("b", "", `player ${i}: `));
    for (const c of hand) {
      const e = h("span", "hcard", c.card);
      e.title = `knows: ${c.knows}`;
      row.append(e);
    }
    wrap.append(row);
  });
  const events = v.events as string[] | undefined;
  if (events?.length) wrap.append(h("div", "events", events.slice(-3).join(" · ")));
  return wrap;
}

export function renderBoard(r: Rendered): HTMLElement {
  const v = r.view;
  if (v.kind === "grid") return gridBoard(v);
  if (v.kind === "hanabi") return hanabiBoard(v);
  const pre = h("pre", "board text-board", v.kind === "text" ? v.body : r.text);
  return pre;
}

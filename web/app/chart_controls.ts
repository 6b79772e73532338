// The controls above the charts: smoothing, log scale, and the x axis (training step or wall-clock
// minutes). Comparing with stored runs is chosen in "Runs in this browser".

import type { Dashboard } from "./charts.ts";

export class ChartControls {
  constructor(root: HTMLElement, dashboard: Dashboard) {
    root.innerHTML = `
      <label>Smoothing <input type="range" class="cc-smooth" min="0" max="0.95" step="0.05" value="0">
        <output class="cc-smooth-v">off</output></label>
      <label class="check"><input type="checkbox" class="cc-log"> Log scale (KL, entropy, throughput)</label>
      <label>X axis <select class="cc-x"><option value="step">training step</option><option value="minutes">minutes since start</option></select></label>
      <span class="muted small">Dashed lines: runs ticked "Compare curves" below the form.</span>`;
    const smooth = root.querySelector<HTMLInputElement>(".cc-smooth")!;
    const out = root.querySelector<HTMLOutputElement>(".cc-smooth-v")!;
    smooth.addEventListener("input", () => {
      const w = Number(smooth.value);
      out.textContent = w ? w.toFixed(2) : "off";
      dashboard.setOptions({ smoothing: w });
    });
    const log = root.querySelector<HTMLInputElement>(".cc-log")!;
    log.addEventListener("change", () => dashboard.setOptions({ log: log.checked }));
    const x = root.querySelector<HTMLSelectElement>(".cc-x")!;
    x.addEventListener("change", () => dashboard.setOptions({ x: x.value as "step" | "minutes" }));
  }
}

// The run form: task, level, model source and the main hyper-parameters, on top of the shipped
// task × level config (configs/*.json, bundled at build time) or the schema's defaults. Every
// change is validated with the trainer's own parseConfig; its messages appear beside the fields,
// and each field's tooltip is the schema's documentation (describeConfig).

import {
  applySets,
  type ConfigError,
  defaultConfig,
  describeConfig,
  LEVELS,
  parseConfig,
  type RunConfig,
} from "../../src/rl/config.ts";
import { ENVS } from "../../src/envs/registry.ts";
import type { ModelSourceSpec } from "../../src/browser/run_store.ts";
import { DEFAULT_HUB, normalizeHubEndpoint } from "./hub.ts";
import {
  CONFIGS,
  HF_CONFIGS,
  HF_MODELS,
  modelGroups,
  QUICKSTART_MODEL,
  recommendedModel,
} from "./model_choices.ts";

/** The Hub endpoint the form starts with: the page's `?hub=` parameter (a mirror, a local server) or huggingface.co. */
function initialHubEndpoint(): string {
  const q = (globalThis as { location?: Location }).location?.search;
  return (q ? new URLSearchParams(q).get("hub") : null) || DEFAULT_HUB;
}

const DOCS = new Map(describeConfig().map((d) => [d.path, d]));

const LEVEL_NAMES: Record<string, string> = {
  L0: "L0 · one agent",
  L1: "L1 · agents share one model",
  L2: "L2 · one LoRA adapter per agent",
  L3: "L3 · one full model per agent",
};

/** The main hyper-parameters shown as fields (dotted config paths). */
const FIELDS: { path: string; label: string; step?: string }[] = [
  { path: "run.steps", label: "Steps" },
  { path: "rollout.envsPerStep", label: "Environments per step (E)" },
  { path: "rollout.k", label: "Candidates per group (K)" },
  { path: "rollout.maxTurns", label: "Max turns" },
  { path: "rollout.maxNewTokens", label: "Max new tokens" },
  { path: "rollout.sampling.temperature", label: "Temperature", step: "0.05" },
  { path: "update.optimizer.lr", label: "Learning rate", step: "any" },
  { path: "update.lora.rank", label: "LoRA rank" },
  { path: "eval.everySteps", label: "Validate every (steps)" },
  { path: "eval.episodes", label: "Validation episodes" },
  { path: "run.checkpointEvery", label: "Checkpoint every (steps)" },
  { path: "run.seed", label: "Seed" },
];

const get = (o: unknown, path: string) =>
  path.split(".").reduce<unknown>((x, k) => (x as Record<string, unknown> | undefined)?.[k], o);
/** A config path as the person filling the form knows it: the field's label, with the path for the curious. */
export function fieldName(path: string): string {
  const f = FIELDS.find((x) => x.path === path);
  return f ? `${f.label} (${path})` : path === "model" ? "Model" : path;
}
function set(o: Record<string, unknown>, path: string, v: unknown) {
  const ks = path.split(".");
  let x = o;
  for (const k of ks.slice(0, -1)) x = (x[k] ??= {}) as Record<string, unknown>;
  x[ks[ks.length - 1]] = v;
}

/** The shipped config for (task, level), preferring the quickstart for the quickstart's built-in warm start. */
function baseConfig(env: string, level: string, model: string): Record<string, unknown> {
  if (model.startsWith("hf:")) {
    const hf = HF_CONFIGS.find((c) =>
      c.name === `${env.replace(/_v\d+$/, "")}_${level}_${model.slice(3)}`
    );
    if (hf) return structuredClone(hf.raw);
  }
  if (model === `builtin:${QUICKSTART_MODEL}`) {
    const qs = CONFIGS.find((c) => c.name === "quickstart");
    if (qs && get(qs.raw, "env.id") === env && qs.raw.level === level) {
      return structuredClone(qs.raw);
    }
  }
  const hit = CONFIGS.find((c) =>
    c.name !== "quickstart" && get(c.raw, "env.id") === env && c.raw.level === level
  );
  if (hit) return structuredClone(hit.raw);
  const raw: Record<string, unknown> = { env: { id: env }, level };
  if (level === "L0") set(raw, "rollout.mode", "single-agent");
  if (level === "L3") set(raw, "update.mode", "full");
  set(raw, "update.optimizer.lr", level === "L3" ? 3e-4 : 1e-3);
  return raw;
}

export interface FormValue {
  config: Record<string, unknown>;
  model: ModelSourceSpec;
  parsed: RunConfig | null;
  errors: { path: string; message: string }[];
}

export class ConfigForm {
  private readonly task: HTMLSelectElement;
  private readonly level: HTMLSelectElement;
  private readonly model: HTMLSelectElement;
  private readonly hub: HTMLInputElement;
  private readonly hubEndpoint: HTMLInputElement;
  private readonly localPick: HTMLInputElement;
  private readonly sets: HTMLInputElement;
  private readonly inputs = new Map<string, HTMLInputElement>();
  private readonly errorsBox: HTMLElement;
  private readonly preview: HTMLElement;
  private base: Record<string, unknown> = {};
  /** Fields the user typed in: kept when the task, level or model changes. */
  private readonly edited = new Set<string>();
  /** The user chose the model themselves: a task change keeps it if the new task offers it. */
  private modelPicked = false;
  private readonly editNote: HTMLElement;
  localFiles: File[] | null = null;
  localHandle: FileSystemDirectoryHandle | null = null;
  value!: FormValue;

  constructor(
    private readonly root: HTMLElement,
    private readonly onChange: (v: FormValue) => void,
  ) {
    root.innerHTML = `
      <div class="row">
        <label class="grow">Task <select id="f-task"></select></label>
        <label>Level <select id="f-level"></select></label>
      </div>
      <p class="muted small" id="f-task-desc"></p>
      <div class="row">
        <label class="wide">Model <select id="f-model"></select></label>
      </div>
      <div class="row model-extra">
        <label class="hub wide">Hub id <input id="f-hub" placeholder="HuggingFaceTB/SmolLM2-135M" spellcheck="false"></label>
        <label class="hub hub-endpoint wide" title="Files are read from <endpoint>/<id>/resolve/main/<file>; a mirror or a local server in that layout works too (page parameter ?hub=URL)">Hub endpoint
          <input id="f-hub-endpoint" spellcheck="false"></label>
        <label class="local wide">Folder <input id="f-local" type="file" webkitdirectory multiple>
          <button type="button" id="f-local-fsa" class="small">Choose folder…</button></label>
      </div>
      <div class="fields"></div>
      <div class="row edit-note" hidden><span class="muted small"></span>
        <button type="button" class="small" id="f-reset">Reset to this task's defaults</button></div>
      <label class="wide"><span>More settings: <code>path=value</code>, comma-separated (as <code>--set</code>)</span>
        <input id="f-sets" placeholder="rewards.filter=drop-zero-variance" spellcheck="false"></label>
      <div class="form-errors" id="f-errors"></div>
      <details><summary>The config that will run</summary><pre id="f-preview"></pre></details>`;
    this.task = root.querySelector("#f-task")!;
    this.level = root.querySelector("#f-level")!;
    this.model = root.querySelector("#f-model")!;
    this.hub = root.querySelector("#f-hub")!;
    this.hubEndpoint = root.querySelector("#f-hub-endpoint")!;
    this.hubEndpoint.value = initialHubEndpoint();
    this.localPick = root.querySelector("#f-local")!;
    this.sets = root.querySelector("#f-sets")!;
    this.errorsBox = root.querySelector("#f-errors")!;
    this.preview = root.querySelector("#f-preview")!;
    this.editNote = root.querySelector(".edit-note")!;
    // Short names in the menu (a long option widens the select past a phone's width); the
    // description goes under it. Team envs only: a single-agent variant is level L0 of its team's
    // env (config env.id names the team's env; parseConfig refuses a variant's id).
    for (const e of ENVS.filter((x) => x.soloOf === undefined)) {
      this.task.add(new Option(e.id.replace(/_v\d+$/, "").replaceAll("_", " "), e.id));
    }
    for (const l of LEVELS) this.level.add(new Option(LEVEL_NAMES[l] ?? l, l));
    root.querySelector("#f-reset")!.addEventListener("click", () => {
      this.edited.clear();
      this.sets.value = "";
      this.loadBase();
    });
    const fields = root.querySelector(".fields")!;
    for (const f of FIELDS) {
      const label = document.createElement("label");
      label.textContent = f.label + " ";
      const input = document.createElement("input");
      input.type = "number";
      input.step = f.step ?? "1";
      input.dataset.path = f.path;
      input.id = `f-${f.path.replaceAll(".", "-")}`;
      const doc = DOCS.get(f.path);
      if (doc) {
        label.title = `${f.path}: ${doc.doc} (type ${doc.type}; default ${doc.default}${
          doc.paper ? `; paper ${doc.paper}` : ""
        })`;
      }
      label.append(input);
      fields.append(label);
      this.inputs.set(f.path, input);
      input.addEventListener("input", () => {
        this.edited.add(f.path);
        this.validate();
      });
    }
    const fsa = root.querySelector<HTMLButtonElement>("#f-local-fsa")!;
    const picker =
      (globalThis as { showDirectoryPicker?: () => Promise<FileSystemDirectoryHandle> })
        .showDirectoryPicker;
    if (!picker) fsa.hidden = true;
    fsa.addEventListener("click", async () => {
      try {
        this.localHandle = await picker!();
        this.localFiles = null;
        fsa.textContent = this.localHandle.name;
        this.validate();
      } catch { /* cancelled */ }
    });
    this.localPick.addEventListener("change", () => {
      this.localFiles = [...(this.localPick.files ?? [])];
      this.localHandle = null;
      this.validate();
    });
    this.task.value = "plan_path_v1";
    this.level.value = "L2";
    this.fillModels();
    if (QUICKSTART_MODEL) this.model.value = `builtin:${QUICKSTART_MODEL}`;
    this.task.addEventListener("change", () => {
      this.fillModels();
      this.loadBase();
    });
    this.level.addEventListener("change", () => {
      if (!this.modelPicked) this.model.value = recommendedModel(this.task.value, this.level.value);
      this.loadBase();
    });
    this.model.addEventListener("change", () => {
      this.modelPicked = true;
      this.loadBase();
    });
    for (const el of [this.hub, this.hubEndpoint, this.sets]) {
      el.addEventListener("input", () => this.validate());
    }
    this.loadBase();
  }

  /** The model menu of the chosen task; the task's own warm start unless the user picked another model it still offers. */
  private fillModels() {
    const keep = this.modelPicked ? this.model.value : null;
    this.model.replaceChildren(
      ...modelGroups(this.task.value).map((g) => {
        const og = document.createElement("optgroup");
        og.label = g.label;
        og.append(...g.options.map((o) => new Option(o.label, o.value)));
        return og;
      }),
    );
    const offered = [...this.model.options].map((o) => o.value);
    this.model.value = keep && offered.includes(keep) && !keep.startsWith("builtin:")
      ? keep
      : recommendedModel(this.task.value, this.level.value);
    if (keep?.startsWith("builtin:")) this.modelPicked = false;
    const env = ENVS.find((e) => e.id === this.task.value);
    this.root.querySelector("#f-task-desc")!.textContent = env ? env.description : "";
  }

  /** Field values from the shipped config of the chosen task and level; fields the user edited keep their values. */
  private loadBase() {
    this.base = baseConfig(this.task.value, this.level.value, this.model.value);
    let d: RunConfig | null = null;
    try {
      d = parseConfig(this.withModel(structuredClone(this.base)));
    } catch { /* shown by validate */ }
    const src = d ?? defaultConfig();
    for (const [path, input] of this.inputs) {
      if (!this.edited.has(path)) input.value = String(get(src, path) ?? "");
    }
    const hf = this.model.value.startsWith("hf:");
    this.root.querySelectorAll<HTMLElement>(".hub").forEach((
      el,
    ) => (el.hidden = this.model.value !== "hub" &&
      !(hf && el.classList.contains("hub-endpoint")))
    );
    this.root.querySelector<HTMLElement>(".local")!.hidden = this.model.value !== "local";
    this.validate();
  }

  private modelSpec(): ModelSourceSpec {
    const v = this.model.value;
    if (v.startsWith("builtin:")) return { kind: "builtin", id: v.slice(8) };
    if (v.startsWith("preset:")) return { kind: "preset", preset: v.slice(7) };
    if (v === "hub" || v.startsWith("hf:")) {
      const id = v === "hub" ? this.hub.value.trim() : HF_MODELS.get(v.slice(3)) ?? "";
      let endpoint = this.hubEndpoint.value.trim() || DEFAULT_HUB;
      try {
        endpoint = normalizeHubEndpoint(endpoint);
      } catch { /* validate() reports it */ }
      return endpoint === DEFAULT_HUB ? { kind: "hub", id } : { kind: "hub", id, endpoint };
    }
    const name = this.localHandle?.name ??
      this.localFiles?.[0]?.webkitRelativePath?.split("/")[0] ?? "local";
    return { kind: "local", name };
  }

  private withModel(raw: Record<string, unknown>): Record<string, unknown> {
    const spec = this.modelSpec();
    // model.folder names the base where the run's files record it: a PEFT adapter's
    // base_model_name_or_path, which PEFT loads as a Hub id or a path (never "hub:<id>").
    const model = spec.kind === "preset" ? { preset: spec.preset, folder: null } : {
      preset: null,
      folder: spec.kind === "hub"
        ? spec.id
        : spec.kind === "builtin"
        ? `models/${spec.id}`
        : spec.name,
    };
    raw.model = { ...(raw.model as object ?? {}), ...model };
    return raw;
  }

  /** Sets a field (tests and the quick-run button use this). */
  setField(path: string, value: string | number) {
    const input = this.inputs.get(path);
    if (input) {
      input.value = String(value);
      this.edited.add(path);
    } else this.sets.value = [this.sets.value, `${path}=${value}`].filter(Boolean).join(", ");
    this.validate();
  }

  validate() {
    this.editNote.hidden = this.edited.size === 0;
    this.editNote.querySelector("span")!.textContent = `Your ${this.edited.size} edited field${
      this.edited.size === 1 ? "" : "s"
    } stay${this.edited.size === 1 ? "s" : ""} when the task changes; the others follow it.`;
    const raw = this.withModel(structuredClone(this.base));
    for (const [path, input] of this.inputs) {
      if (input.value !== "") set(raw, path, Number(input.value));
    }
    const errors: { path: string; message: string }[] = [];
    const sets = this.sets.value.split(",").map((s) => s.trim()).filter(Boolean);
    let parsed: RunConfig | null = null;
    try {
      parsed = parseConfig(raw, { sets });
    } catch (e) {
      if ((e as Error).name === "ConfigError") {
        errors.push(
          ...(e as ConfigError).issues.map((i) => ({ path: i.path, message: i.message })),
        );
      } else errors.push({ path: "", message: `${(e as Error).name}: ${(e as Error).message}` });
    }
    const spec = this.modelSpec();
    if (spec.kind === "hub" && !spec.id) {
      errors.push({ path: "model", message: "type a Hub model id (owner/name)" });
    }
    if (spec.kind === "hub" && spec.endpoint) {
      try {
        normalizeHubEndpoint(spec.endpoint);
      } catch (e) {
        errors.push({ path: "model", message: (e as Error).message });
      }
    }
    if (spec.kind === "local" && !this.localFiles?.length && !this.localHandle) {
      errors.push({
        path: "model",
        message: "pick the model's folder (config.json, *.safetensors, tokenizer files)",
      });
    }
    for (const [path, input] of this.inputs) {
      input.classList.toggle(
        "bad",
        errors.some((e) => e.path === path),
      );
    }
    this.errorsBox.replaceChildren(...errors.map((e) => {
      const d = document.createElement("div");
      d.textContent = e.path ? `${fieldName(e.path)}: ${e.message}` : e.message;
      return d;
    }));
    // What runs: the form's JSON with the --set values applied (the worker validates it again).
    const finalRaw = parsed ? applySets(raw, sets) : raw;
    this.preview.textContent = JSON.stringify(parsed ?? finalRaw, null, 2);
    this.value = { config: finalRaw, model: spec, parsed, errors };
    this.onChange(this.value);
  }
}

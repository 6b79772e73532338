// The run form: task, level, model source and the main hyper-parameters, on top of the shipped
// task × level config (configs/*.json, bundled at build time) or the schema's defaults. Every
// change is validated with the trainer's own parseConfig; its messages appear beside the fields,
// and each field's tooltip is the schema's documentation (describeConfig).

import { applySets, type ConfigError, defaultConfig, describeConfig, LEVELS, parseConfig, type RunConfig } from "../../src/rl/config.ts";
import { ENVS } from "../../src/envs/registry.ts";
import type { ModelSourceSpec } from "../../src/browser/run_store.ts";
import { DEFAULT_HUB, normalizeHubEndpoint } from "./hub.ts";

/** The Hub endpoint the form starts with: the page's `?hub=` parameter (a mirror, a local server) or huggingface.co. */
function initialHubEndpoint(): string {
  const q = (globalThis as { location?: Location }).location?.search;
  return (q ? new URLSearchParams(q).get("hub") : null) || DEFAULT_HUB;
}

const shipped = import.meta.glob("../../configs/*.json", { eager: true, import: "default" }) as Record<string, Record<string, unknown>>;
const CONFIGS = Object.entries(shipped).map(([p, c]) => ({ name: p.replace(/^.*\//, "").replace(/\.json$/, ""), raw: c }));
/** configs/hf/<task>_<level>_<model>.json: real chat models from the Hub, offered as "hf:<model>" in the model menu. */
const hfShipped = import.meta.glob("../../configs/hf/*.json", { eager: true, import: "default" }) as Record<string, Record<string, unknown>>;
const HF_CONFIGS = Object.entries(hfShipped).map(([p, c]) => ({ name: p.replace(/^.*\//, "").replace(/\.json$/, ""), raw: c }));
/** Model key (e.g. qwen2.5-0.5b) → its Hub id, read off the configs. */
const HF_MODELS = new Map(HF_CONFIGS.map((c) => [c.name.replace(/^.*_L\d_/, ""), String((c.raw.model as { hub?: string }).hub)]));
const presetFiles = import.meta.glob("../../configs/models/*.json", { eager: true, import: "default" });
const PRESET_NAMES = Object.keys(presetFiles).map((p) => p.replace(/^.*\//, "").replace(/\.json$/, ""));
const builtinFiles = import.meta.glob("../../models/*/config.json", { eager: true, import: "default" });
const BUILTIN_NAMES = Object.keys(builtinFiles).map((p) => p.split("/").slice(-2)[0]);
const DOCS = new Map(describeConfig().map((d) => [d.path, d]));

/** The main hyper-parameters shown as fields (dotted config paths). */
const FIELDS: { path: string; label: string; step?: string }[] = [
  { path: "run.steps", label: "steps" },
  { path: "rollout.envsPerStep", label: "envs / step (E)" },
  { path: "rollout.k", label: "candidates (K)" },
  { path: "rollout.maxTurns", label: "max turns" },
  { path: "rollout.maxNewTokens", label: "max new tokens" },
  { path: "rollout.sampling.temperature", label: "temperature", step: "0.05" },
  { path: "update.optimizer.lr", label: "learning rate", step: "any" },
  { path: "update.lora.rank", label: "LoRA rank" },
  { path: "eval.everySteps", label: "validate every" },
  { path: "eval.episodes", label: "validation episodes" },
  { path: "run.checkpointEvery", label: "checkpoint every" },
  { path: "run.seed", label: "seed" },
];

const get = (o: unknown, path: string) => path.split(".").reduce<unknown>((x, k) => (x as Record<string, unknown> | undefined)?.[k], o);
/** The quickstart's warm start (configs/quickstart.json model.folder): the built-in model the page opens with. */
const QUICKSTART_MODEL = String(get(CONFIGS.find((c) => c.name === "quickstart")?.raw, "model.folder") ?? "").split("/").pop() ?? "";
function set(o: Record<string, unknown>, path: string, v: unknown) {
  const ks = path.split(".");
  let x = o;
  for (const k of ks.slice(0, -1)) x = (x[k] ??= {}) as Record<string, unknown>;
  x[ks[ks.length - 1]] = v;
}

/** The shipped config for (task, level), preferring the quickstart for the quickstart's built-in warm start. */
function baseConfig(env: string, level: string, model: string): Record<string, unknown> {
  if (model.startsWith("hf:")) {
    const hf = HF_CONFIGS.find((c) => c.name === `${env.replace(/_v\d+$/, "")}_${level}_${model.slice(3)}`);
    if (hf) return structuredClone(hf.raw);
  }
  if (model === `builtin:${QUICKSTART_MODEL}`) {
    const qs = CONFIGS.find((c) => c.name === "quickstart");
    if (qs && get(qs.raw, "env.id") === env && qs.raw.level === level) return structuredClone(qs.raw);
  }
  const hit = CONFIGS.find((c) => c.name !== "quickstart" && get(c.raw, "env.id") === env && c.raw.level === level);
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
  localFiles: File[] | null = null;
  localHandle: FileSystemDirectoryHandle | null = null;
  value!: FormValue;

  constructor(private readonly root: HTMLElement, private readonly onChange: (v: FormValue) => void) {
    root.innerHTML = `
      <div class="row">
        <label>task <select id="f-task"></select></label>
        <label>level <select id="f-level"></select></label>
      </div>
      <div class="row">
        <label class="wide">model <select id="f-model"></select></label>
      </div>
      <div class="row model-extra">
        <label class="hub wide">Hub id <input id="f-hub" placeholder="HuggingFaceTB/SmolLM2-135M" spellcheck="false"></label>
        <label class="hub hub-endpoint wide" title="Files are read from <endpoint>/<id>/resolve/main/<file>; a mirror or a local server in that layout works too (page parameter ?hub=URL)">Hub endpoint
          <input id="f-hub-endpoint" spellcheck="false"></label>
        <label class="local wide">folder <input id="f-local" type="file" webkitdirectory multiple>
          <button type="button" id="f-local-fsa" class="small">choose folder…</button></label>
      </div>
      <div class="fields"></div>
      <label class="wide"><span>more settings: <code>path=value</code>, comma-separated (as <code>--set</code>)</span>
        <input id="f-sets" placeholder="rewards.filter=drop-zero-variance" spellcheck="false"></label>
      <div class="form-errors" id="f-errors"></div>
      <details><summary>the config that will run</summary><pre id="f-preview"></pre></details>`;
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
    for (const e of ENVS) this.task.add(new Option(`${e.id} — ${e.description}`, e.id));
    for (const l of LEVELS) this.level.add(new Option(l, l));
    for (const b of BUILTIN_NAMES) this.model.add(new Option(`built-in warm start: ${b}`, `builtin:${b}`));
    for (const p of PRESET_NAMES) this.model.add(new Option(`preset: ${p} (fresh init, byte tokenizer)`, `preset:${p}`));
    for (const [key, id] of HF_MODELS) this.model.add(new Option(`Hub: ${id} (configs/hf, chat prompts; online)`, `hf:${key}`));
    this.model.add(new Option("Hugging Face model from a local folder…", "local"));
    this.model.add(new Option("Hugging Face model from the Hub by id (online)…", "hub"));
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
      if (doc) label.title = `${f.path}: ${doc.doc} (type ${doc.type}; default ${doc.default}${doc.paper ? `; paper ${doc.paper}` : ""})`;
      label.append(input);
      fields.append(label);
      this.inputs.set(f.path, input);
      input.addEventListener("input", () => this.validate());
    }
    const fsa = root.querySelector<HTMLButtonElement>("#f-local-fsa")!;
    const picker = (globalThis as { showDirectoryPicker?: () => Promise<FileSystemDirectoryHandle> }).showDirectoryPicker;
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
    this.model.value = BUILTIN_NAMES.includes(QUICKSTART_MODEL) ? `builtin:${QUICKSTART_MODEL}` : `preset:${PRESET_NAMES[0]}`;
    for (const el of [this.task, this.level, this.model]) el.addEventListener("change", () => this.loadBase());
    for (const el of [this.hub, this.hubEndpoint, this.sets]) el.addEventListener("input", () => this.validate());
    this.loadBase();
  }

  /** Field values from the shipped config of the chosen task and level. */
  private loadBase() {
    this.base = baseConfig(this.task.value, this.level.value, this.model.value);
    let d: RunConfig | null = null;
    try {
      d = parseConfig(this.withModel(structuredClone(this.base)));
    } catch { /* shown by validate */ }
    const src = d ?? defaultConfig();
    for (const [path, input] of this.inputs) input.value = String(get(src, path) ?? "");
    const hf = this.model.value.startsWith("hf:");
    this.root.querySelectorAll<HTMLElement>(".hub").forEach((el) => (el.hidden = this.model.value !== "hub" && !(hf && el.classList.contains("hub-endpoint"))));
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
    const name = this.localHandle?.name ?? this.localFiles?.[0]?.webkitRelativePath?.split("/")[0] ?? "local";
    return { kind: "local", name };
  }

  private withModel(raw: Record<string, unknown>): Record<string, unknown> {
    const spec = this.modelSpec();
    // model.folder names the base where the run's files record it: a PEFT adapter's
    // base_model_name_or_path, which PEFT loads as a Hub id or a path (never "hub:<id>").
    const model = spec.kind === "preset" ? { preset: spec.preset, folder: null }
      : { preset: null, folder: spec.kind === "hub" ? spec.id : spec.kind === "builtin" ? `models/${spec.id}` : spec.name };
    raw.model = { ...(raw.model as object ?? {}), ...model };
    return raw;
  }

  /** Sets a field (tests and the quick-run button use this). */
  setField(path: string, value: string | number) {
    const input = this.inputs.get(path);
    if (input) input.value = String(value);
    else this.sets.value = [this.sets.value, `${path}=${value}`].filter(Boolean).join(", ");
    this.validate();
  }

  validate() {
    const raw = this.withModel(structuredClone(this.base));
    for (const [path, input] of this.inputs) if (input.value !== "") set(raw, path, Number(input.value));
    const errors: { path: string; message: string }[] = [];
    const sets = this.sets.value.split(",").map((s) => s.trim()).filter(Boolean);
    let parsed: RunConfig | null = null;
    try {
      parsed = parseConfig(raw, { sets });
    } catch (e) {
      if ((e as Error).name === "ConfigError") errors.push(...(e as ConfigError).issues.map((i) => ({ path: i.path, message: i.message })));
      else errors.push({ path: "", message: `${(e as Error).name}: ${(e as Error).message}` });
    }
    const spec = this.modelSpec();
    if (spec.kind === "hub" && !spec.id) errors.push({ path: "model", message: "type a Hub model id (owner/name)" });
    if (spec.kind === "hub" && spec.endpoint) {
      try {
        normalizeHubEndpoint(spec.endpoint);
      } catch (e) {
        errors.push({ path: "model", message: (e as Error).message });
      }
    }
    if (spec.kind === "local" && !this.localFiles?.length && !this.localHandle) errors.push({ path: "model", message: "pick the model's folder (config.json, *.safetensors, tokenizer files)" });
    for (const [path, input] of this.inputs) input.classList.toggle("bad", errors.some((e) => e.path === path));
    this.errorsBox.replaceChildren(...errors.map((e) => {
      const d = document.createElement("div");
      d.textContent = e.path ? `${e.path}: ${e.message}` : e.message;
      return d;
    }));
    // What runs: the form's JSON with the --set values applied (the worker validates it again).
    const finalRaw = parsed ? applySets(raw, sets) : raw;
    this.preview.textContent = JSON.stringify(parsed ?? finalRaw, null, 2);
    this.value = { config: finalRaw, model: spec, parsed, errors };
    this.onChange(this.value);
  }
}

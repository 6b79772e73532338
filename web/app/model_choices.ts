// Which models the run form offers for a task, and which one it picks: the single place that
// knows the shipped configs (configs/*.json), the built-in warm starts (models/*/) and the model
// presets (configs/models/*.json), all bundled at build time. A new kind of model source (e.g.
// the Hugging Face chat-model configs, configs/hf) is one more entry in `modelGroups`.

const get = (o: unknown, path: string) =>
  path.split(".").reduce<unknown>((x, k) => (x as Record<string, unknown> | undefined)?.[k], o);

const shipped = import.meta.glob("../../configs/*.json", {
  eager: true,
  import: "default",
}) as Record<string, Record<string, unknown>>;
/** The shipped task × level configs (and the quickstart), by file name. */
export const CONFIGS = Object.entries(shipped).map(([p, c]) => ({
  name: p.replace(/^.*\//, "").replace(/\.json$/, ""),
  raw: c,
}));
/** configs/hf/<task>_<level>_<model>.json: real chat models from the Hub, offered as "hf:<model>". */
const hfShipped = import.meta.glob("../../configs/hf/*.json", {
  eager: true,
  import: "default",
}) as Record<string, Record<string, unknown>>;
export const HF_CONFIGS = Object.entries(hfShipped).map(([p, c]) => ({
  name: p.replace(/^.*\//, "").replace(/\.json$/, ""),
  raw: c,
}));
/** Model key (e.g. qwen2.5-0.5b) → its Hub id, read off the configs. */
export const HF_MODELS = new Map(
  HF_CONFIGS.map((
    c,
  ) => [c.name.replace(/^.*_L\d_/, ""), String((c.raw.model as { hub?: string }).hub)]),
);
const presetFiles = import.meta.glob("../../configs/models/*.json", {
  eager: true,
  import: "default",
});
export const PRESET_NAMES = Object.keys(presetFiles).map((p) =>
  p.replace(/^.*\//, "").replace(/\.json$/, "")
);
const builtinFiles = import.meta.glob("../../models/*/config.json", {
  eager: true,
  import: "default",
});
export const BUILTIN_NAMES = Object.keys(builtinFiles).map((p) => p.split("/").slice(-2)[0]);

/** The built-in model a shipped config warm-starts from ("models/<name>"), or null. */
const builtinOf = (raw: Record<string, unknown>) => {
  const f = get(raw, "model.folder");
  const name = typeof f === "string" && f.startsWith("models/") ? f.slice(7) : null;
  return name && BUILTIN_NAMES.includes(name) ? name : null;
};

/** The quickstart's warm start (configs/quickstart.json model.folder). */
export const QUICKSTART_MODEL =
  builtinOf(CONFIGS.find((c) => c.name === "quickstart")?.raw ?? {}) ?? "";

/** Built-in warm starts made for a task: those its shipped configs start from. */
export function taskBuiltins(envId: string): string[] {
  return [
    ...new Set(
      CONFIGS.filter((c) => get(c.raw, "env.id") === envId).map((c) => builtinOf(c.raw)).filter((
        b,
      ): b is string => b !== null),
    ),
  ];
}

/** The model a task starts with: its shipped (task, level) config's warm start, else the task's, else a preset. */
export function recommendedModel(envId: string, level: string): string {
  const exact = CONFIGS.find((c) =>
    c.name !== "quickstart" && get(c.raw, "env.id") === envId && c.raw.level === level
  );
  const b = (exact && builtinOf(exact.raw)) ?? taskBuiltins(envId)[0];
  return b ? `builtin:${b}` : `preset:${PRESET_NAMES[0]}`;
}

export interface ModelGroup {
  label: string;
  options: { value: string; label: string }[];
}

/** The model menu for a task: its own warm starts first, other tasks' last. */
export function modelGroups(envId: string): ModelGroup[] {
  const mine = taskBuiltins(envId);
  return [
    {
      label: "Trained for this task",
      options: mine.map((b) => ({ value: `builtin:${b}`, label: `Built-in warm start: ${b}` })),
    },
    {
      label: "Untrained (random init, byte tokenizer)",
      options: PRESET_NAMES.map((p) => ({ value: `preset:${p}`, label: `Preset: ${p}` })),
    },
    {
      label: "Chat models from the Hub (configs/hf, chat prompts; online)",
      options: [...HF_MODELS].map(([key, id]) => ({ value: `hf:${key}`, label: `Hub: ${id}` })),
    },
    {
      label: "Hugging Face",
      options: [
        { value: "local", label: "From a folder on this computer…" },
        { value: "hub", label: "From the Hub by id (online)…" },
      ],
    },
    {
      label: "Warm starts of other tasks",
      options: BUILTIN_NAMES.filter((b) => !mine.includes(b)).map((b) => ({
        value: `builtin:${b}`,
        label: `Built-in: ${b}`,
      })),
    },
  ].filter((g) => g.options.length);
}

// Where a run's base model comes from, in the browser: a preset (configs/models/*.json, freshly
// initialised), a built-in warm start bundled with the app (models/<id>/ as static assets), a
// folder on the user's disk (File System Access handle or picked files), or the Hugging Face Hub
// by id (range requests to huggingface.co, or to another endpoint in the same URL layout:
// <endpoint>/<owner>/<name>/resolve/<revision>/<file>; needs the network).

import {
  bytesSource,
  filesFolder,
  type Folder,
  opfsFolder,
  urlFolder,
} from "../../src/io/bytesource.ts";
import { parseModelConfig } from "../../src/model/config.ts";
import { initModel } from "../../src/model/init.ts";
import { ByteTokenizer, loadTokenizer, type Tokenizer } from "../../src/model/tokenizer.ts";
import { loadModel, type ModelWeights } from "../../src/model/weights.ts";
import type { ModelSourceSpec } from "../../src/browser/run_store.ts";
import type { LocalModel } from "./protocol.ts";
import { DEFAULT_HUB, hubFolderUrl } from "./hub.ts";

const presetJson = import.meta.glob("../../configs/models/*.json", {
  eager: true,
  import: "default",
}) as Record<string, unknown>;
const builtinUrls = import.meta.glob("../../models/*/*.{json,safetensors}", {
  eager: true,
  query: "?url",
  import: "default",
}) as Record<string, string>;

export const PRESETS: Record<string, unknown> = Object.fromEntries(
  Object.entries(presetJson).map(([p, j]) => [p.replace(/^.*\//, "").replace(/\.json$/, ""), j]),
);

/** Built-in warm starts: folder name → file name → URL of the bundled asset. */
export const BUILTINS: Record<string, Record<string, string>> = {};
for (const [p, url] of Object.entries(builtinUrls)) {
  const [, id, file] = p.match(/models\/([^/]+)\/([^/]+)$/)!;
  (BUILTINS[id] ??= {})[file] = new URL(url, self.location.href).href;
}

/**
 * A Folder over bundled asset URLs (names hashed by the build; small files inlined as data:
 * URLs). The built-in models are small, so each file is fetched whole.
 */
function assetFolder(id: string, files: Record<string, string>): Folder {
  return {
    name: `builtin:${id}`,
    async open(file) {
      const url = files[file];
      if (!url) return null;
      const res = await fetch(url);
      if (!res.ok) {
        throw Object.assign(new Error(`${url}: HTTP ${res.status}`), { name: "ReadError" });
      }
      return bytesSource(new Uint8Array(await res.arrayBuffer()), `builtin:${id}/${file}`);
    },
  };
}

export interface LoadedBase {
  weights: ModelWeights;
  tokenizer: Tokenizer;
  /** For the page: what was loaded, from where. */
  label: string;
  /** Folder holding the model (tokenizer files), null for presets. */
  folder: Folder | null;
}

export function describeSource(s: ModelSourceSpec): string {
  switch (s.kind) {
    case "preset":
      return `preset ${s.preset} (fresh init)`;
    case "builtin":
      return `built-in warm start ${s.id}`;
    case "hub":
      return `Hub ${s.id}${s.revision ? `@${s.revision}` : ""}${
        s.endpoint && s.endpoint !== DEFAULT_HUB ? ` (from ${s.endpoint})` : ""
      }`;
    case "local":
      return `local folder ${s.name}`;
  }
}

export async function loadBaseModel(
  spec: ModelSourceSpec,
  seed: number,
  local?: LocalModel,
): Promise<LoadedBase> {
  if (spec.kind === "preset") {
    const json = PRESETS[spec.preset];
    if (!json) {
      throw Object.assign(
        new Error(`no preset "${spec.preset}"; presets: ${Object.keys(PRESETS).join(", ")}`),
        { name: "ModelSourceError" },
      );
    }
    return {
      weights: initModel(parseModelConfig(json), { seed }),
      tokenizer: new ByteTokenizer(),
      label: describeSource(spec),
      folder: null,
    };
  }
  let folder: Folder;
  if (spec.kind === "builtin") {
    const files = BUILTINS[spec.id];
    if (!files) {
      throw Object.assign(new Error(`no built-in model "${spec.id}"`), {
        name: "ModelSourceError",
      });
    }
    folder = assetFolder(spec.id, files);
  } else if (spec.kind === "hub") {
    if (!/^[\w.-]+\/[\w.-]+$/.test(spec.id)) {
      throw Object.assign(
        new Error(
          `"${spec.id}" is not a Hub model id (owner/name, e.g. HuggingFaceTB/SmolLM2-135M)`,
        ),
        { name: "ModelSourceError" },
      );
    }
    folder = urlFolder(hubFolderUrl(spec.id, spec.revision, spec.endpoint));
  } else {
    if (!local) {
      throw Object.assign(
        new Error(`the run's model is the local folder "${spec.name}": pick it again to continue`),
        { name: "ModelSourceError" },
      );
    }
    folder = "handle" in local ? opfsFolder(local.handle) : filesFolder(local.files, spec.name);
  }
  const weights = await loadModel(folder);
  const tokenizer = await loadTokenizer(folder, { config: weights.config });
  return { weights, tokenizer, label: describeSource(spec), folder };
}

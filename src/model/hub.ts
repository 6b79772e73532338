// A Hugging Face Hub model as a Folder: each file is read from <endpoint>/<id>/resolve/<revision>/
// (range requests, so a safetensors file is read tensor by tensor, never staged on disk). The
// endpoint is a parameter so a mirror ($HF_ENDPOINT, as huggingface_hub reads it) or a local
// server works the same; a token (HF_TOKEN) opens gated or private repositories.

import { type Folder, urlFolder } from "../io/bytesource.ts";

export const HF_DEFAULT_ENDPOINT = "https://huggingface.co";

export interface HubOptions {
  /** Branch, tag or commit (default "main"). */
  readonly revision?: string;
  /** Hub server (default https://huggingface.co). */
  readonly endpoint?: string;
  /** Access token, sent as a Bearer header. */
  readonly token?: string;
}

/** The base URL of a repository's files at a revision. */
export function hubBaseUrl(id: string, opts: HubOptions = {}): string {
  const endpoint = (opts.endpoint || HF_DEFAULT_ENDPOINT).replace(/\/+$/, "");
  return `${endpoint}/${id}/resolve/${encodeURIComponent(opts.revision ?? "main")}/`;
}

/** The repository `id` ("owner/name") as a Folder that loadModel and loadTokenizer read. */
export function hubFolder(id: string, opts: HubOptions = {}): Folder {
  const init = opts.token ? { headers: { Authorization: `Bearer ${opts.token}` } } : undefined;
  return urlFolder(hubBaseUrl(id, opts), init);
}

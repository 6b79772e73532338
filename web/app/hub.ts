// The Hugging Face Hub's URL layout, <endpoint>/<owner>/<name>/resolve/<revision>/<file>, with a
// configurable endpoint (a mirror or a local server in the same layout; the page's ?hub=URL).
// Small and dependency-free so the page's form can use it without the model loader.

/** Where Hub ids resolve unless a run names another endpoint (a mirror, a local server). */
export const DEFAULT_HUB = "https://huggingface.co";

/** The endpoint as a base URL without a trailing slash; throws ModelSourceError when it is not http(s). */
export function normalizeHubEndpoint(endpoint: string): string {
  let u: URL;
  try {
    u = new URL(endpoint.trim());
  } catch {
    throw Object.assign(
      new Error(`Hub endpoint "${endpoint}" is not a URL (e.g. ${DEFAULT_HUB})`),
      { name: "ModelSourceError" },
    );
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") {
    throw Object.assign(new Error(`Hub endpoint "${endpoint}" is not an http(s) URL`), {
      name: "ModelSourceError",
    });
  }
  return u.href.replace(/\/+$/, "");
}

/** The base URL of a Hub model's files at a revision. */
export function hubFolderUrl(id: string, revision = "main", endpoint = DEFAULT_HUB): string {
  return `${normalizeHubEndpoint(endpoint)}/${id}/resolve/${encodeURIComponent(revision)}/`;
}

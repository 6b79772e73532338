// Vite's `import.meta.glob` (bundles files at build time), declared for `deno check` of web/: the
// subset of vite/client's type this app uses.

interface ImportMetaGlobOptions {
  eager?: boolean;
  import?: string;
  query?: string | Record<string, string>;
}

interface ImportMeta {
  glob<T = unknown>(pattern: string | string[], options?: ImportMetaGlobOptions): Record<string, T>;
}

// GPU bytes by kind: every buffer created while a function runs, classed by its label
// (parameters, gradients, optimizer state, KV cache, logits; the rest is activations and
// scratch). The benches report it per measured setting; `train` says it for a run's setup.

/** Buffer labels → what they hold (first match wins; the rest is activations and scratch). */
const BUFFER_KINDS: readonly [kind: string, test: RegExp][] = [
  ["params", /^(params(\.half)?\[|lora\.params|atlas|wtex)/],
  ["grads", /^(grads\[|lora\.grads)/],
  ["optimizer", /^(adam\.[mv]|adamw:|decay\d)/],
  ["kv_cache", /^[kv]cache/],
  ["logits", /^(logits|dlogits)/],
];

export type ByteTally = Record<string, number>;

/** Runs `fn` with device.createBuffer wrapped, summing the bytes created by kind. */
export async function tallyBuffers<T>(
  device: GPUDevice,
  fn: () => Promise<T>,
): Promise<{ value: T; bytes: ByteTally }> {
  const bytes: ByteTally = Object.fromEntries(
    [...BUFFER_KINDS.map(([k]) => k), "activations"].map((k) => [k, 0]),
  );
  const dev = device as { createBuffer: GPUDevice["createBuffer"] };
  const had = Object.hasOwn(device, "createBuffer"), orig = device.createBuffer;
  dev.createBuffer = (d: GPUBufferDescriptor) => {
    const kind = BUFFER_KINDS.find(([, re]) => re.test(d.label ?? ""))?.[0] ?? "activations";
    bytes[kind] += d.size;
    return orig.call(device, d);
  };
  try {
    return { value: await fn(), bytes };
  } finally {
    if (had) dev.createBuffer = orig;
    else delete (dev as Partial<typeof dev>).createBuffer;
  }
}

const KIND_NAMES: Record<string, string> = {
  params: "params",
  grads: "grads",
  optimizer: "optimizer",
  kv_cache: "KV cache",
  logits: "logits",
  activations: "activations",
};

/** Bytes as GiB, MiB or KiB, whichever reads best. */
export function formatBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(n >= 100 * 2 ** 20 ? 0 : 1)} MiB`;
  return `${(n / 2 ** 10).toFixed(1)} KiB`;
}

/** "9.87 GiB (KV cache 4.59 GiB, activations 2.80 GiB, params 1.84 GiB, logits 233 MiB, ...)": the total, then each non-zero kind, largest first. */
export function formatByteTally(bytes: ByteTally): string {
  const total = Object.values(bytes).reduce((a, b) => a + b, 0);
  const parts = Object.entries(bytes).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${KIND_NAMES[k] ?? k} ${formatBytes(n)}`);
  return `${formatBytes(total)} (${parts.join(", ")})`;
}

// GPU bytes by kind for the benches: every buffer created while a function runs, classed by its
// label (parameters, gradients, optimizer state, KV cache, logits; the rest is activations and
// scratch).

/** Buffer labels → what they hold (first match wins; the rest is activations and scratch). */
const BUFFER_KINDS: readonly [kind: string, test: RegExp][] = [
  ["params", /^(params\[|lora\.params|atlas|wtex)/],
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

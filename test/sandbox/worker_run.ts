// Spawns worker_scenarios.ts (see there for why Workers are tested from a script) and returns
// its JSON line.

export async function runScenario(name: string): Promise<Record<string, unknown>> {
  const script = new URL("./worker_scenarios.ts", import.meta.url).pathname;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script, name],
    stdin: "null",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const text = new TextDecoder().decode(stdout).trim();
  if (code !== 0) {
    throw new Error(`scenario ${name} failed (${code}): ${new TextDecoder().decode(stderr)}`);
  }
  return JSON.parse(text.split("\n").pop()!);
}

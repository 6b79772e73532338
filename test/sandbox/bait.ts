// Bait for the hostile-code tests (Deno only): a local HTTP server that counts hits, a secret
// file and module, a secret environment variable, and a marker path a subprocess would create.

export interface Bait {
  secret: string;
  dir: string;
  secretFile: string;
  localModule: string;
  markerFile: string;
  secretEnv: string;
  probeUrl: string;
  hits(): number;
  close(): Promise<void>;
}

/** Starts the bait; close() removes all of it. */
export async function makeBait(): Promise<Bait> {
  const secret = `secret-${crypto.randomUUID()}`;
  const dir = await Deno.makeTempDir({ prefix: "sandbox-bait-" });
  const secretFile = `${dir}/secret.txt`;
  const localModule = new URL(`file://${dir}/secret.js`).href;
  await Deno.writeTextFile(secretFile, secret);
  await Deno.writeTextFile(`${dir}/secret.js`, `export default ${JSON.stringify(secret)};`);
  const secretEnv = "PETTINGLLMS_SANDBOX_TEST_SECRET";
  Deno.env.set(secretEnv, secret);
  let hits = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    hits++;
    return new Response(`export default ${JSON.stringify(secret)};`, {
      headers: { "content-type": "text/javascript", "access-control-allow-origin": "*" },
    });
  });
  return {
    secret,
    dir,
    secretFile,
    localModule,
    markerFile: `${dir}/marker`,
    secretEnv,
    probeUrl: `http://127.0.0.1:${server.addr.port}/`,
    hits: () => hits,
    async close() {
      await server.shutdown();
      Deno.env.delete(secretEnv);
      await Deno.remove(dir, { recursive: true });
    },
  };
}

export function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

// `deno task demos`: oracle demonstrations of an environment as SFT JSONL (one record per agent
// turn: the observation as prompt, the oracle's message as completion), for `deno task sft`.
// Compact style writes prompt/completion records, chat style messages records.

import { defineCli, parseArgsOrExit, runMain, UsageError } from "./cli_args.ts";
import { writeFileAtomic } from "../io/deno_files.ts";
import { writingTo } from "../io/errors.ts";
import { demoJsonl, demonstrations } from "../envs/demonstrations.ts";
import { SEARCH_DRILL_ENV, type SearchDrillKind } from "../envs/search/drills.ts";
import { envIds, getEnv } from "../envs/registry.ts";
import type { Difficulty, PromptStyle, Split } from "../envs/types.ts";

export const DEMOS_CLI = defineCli({
  command: "npx deno task demos",
  summary:
    "Write oracle demonstrations of an environment as SFT records (JSONL), one per agent turn.",
  flags: {
    env: {
      type: "string",
      required: true,
      choices: envIds(),
      metavar: "ENV_ID",
      help: "environment id",
    },
    episodes: {
      type: "number",
      required: true,
      integer: true,
      min: 1,
      help: "episodes to play (seeds seed .. seed+N-1)",
    },
    split: { type: "string", choices: ["train", "test"], default: "train", help: "task split" },
    style: {
      type: "string",
      choices: ["compact", "chat"],
      default: "compact",
      help: "compact: prompt/completion records; chat: messages records",
    },
    out: { type: "string", metavar: "FILE.jsonl", help: "file to write (default: stdout)" },
    seed: { type: "number", integer: true, min: 0, default: 0, help: "seed of the first episode" },
    agents: {
      type: "string",
      metavar: "A,B",
      help: "keep only these agents' turns (default: all)",
    },
    "helper-tools": {
      type: "boolean",
      help:
        "tool turns call the env's predefined helpers (e.g. bfs) instead of writing the algorithm",
    },
    "copy-drills": {
      type: "boolean",
      help:
        "plan turns copying random tool answers instead of oracle play (plan_path_v1, sokoban_v1, sudoku4_v1): drills for the plan agent's copy; for search_v1, N short records copying random letters or names (search/drills.ts)",
    },
    "drill-kinds": {
      type: "string",
      metavar: "K,K",
      help:
        "with --copy-drills for search_v1: the drill kinds to draw (letters, names, find; default all)",
    },
    explore: {
      type: "number",
      min: 0,
      default: 0,
      metavar: "P",
      help:
        "fraction of turns (in [0, 1)) where a random move replaces the oracle's, unrecorded, so the data shows states after mistakes",
    },
    "tool-noise": {
      type: "number",
      min: 0,
      default: 0,
      metavar: "P",
      help:
        "fraction of episodes (in [0, 1)) whose tool prints a wrong answer of the right form; the plan turn keeps the oracle's own answer and that tool turn is not recorded (plan_path_v1, sokoban_v1, sudoku4_v1)",
    },
    difficulty: {
      type: "string",
      metavar: "JSON",
      help: `difficulty knobs, e.g. '{"size":5}' (match the RL config's env.difficulty)`,
    },
  },
});

function parseDifficulty(text: string | undefined): Partial<Difficulty> | undefined {
  if (text === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new UsageError(`--difficulty ${text}: not JSON; pass an object such as '{"size":5}'`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new UsageError(`--difficulty ${text}: must be a JSON object of knobs, e.g. '{"size":5}'`);
  }
  return v as Partial<Difficulty>;
}

if (import.meta.main) {
  const args = parseArgsOrExit(DEMOS_CLI);
  await runMain(async () => {
    const env = getEnv(args.env);
    const agents = args.agents?.split(",").map((a) => a.trim()).filter(Boolean);
    const bad = agents?.filter((a) => !env.possibleAgents.includes(a)) ?? [];
    if (bad.length) {
      throw new UsageError(
        `--agents: ${env.id} has no agent ${bad.join(", ")}; its agents: ${
          env.possibleAgents.join(", ")
        }`,
      );
    }
    const difficulty = parseDifficulty(args.difficulty);
    const demos = demonstrations(env, {
      episodes: args.episodes,
      split: args.split as Split,
      style: args.style as PromptStyle,
      seed: args.seed,
      agents,
      helperTools: args.helperTools,
      copyDrills: args.copyDrills,
      explore: args.explore,
      toolNoise: args.toolNoise,
      drillKinds: args.drillKinds?.split(",").map((k) => k.trim()).filter(Boolean) as
        | SearchDrillKind[]
        | undefined,
      difficulty,
    });
    const text = demoJsonl(demos.records);
    if (args.out === undefined) {
      const bytes = new TextEncoder().encode(text);
      for (let off = 0; off < bytes.length;) off += await Deno.stdout.write(bytes.subarray(off));
    } else {
      const slash = args.out.lastIndexOf("/");
      const dir = args.out.slice(0, slash);
      if (slash > 0) await writingTo(dir, () => Deno.mkdir(dir, { recursive: true }));
      await writeFileAtomic(args.out, text);
    }
    const what = args.copyDrills && env.id === SEARCH_DRILL_ENV
      ? `copy drills of ${env.id} (${args.split}, ${args.style}; seeds ${args.seed}..${
        args.seed + demos.episodes - 1
      })`
      : `records from ${demos.episodes} ${env.id} episodes (${args.split}, ${args.style}; ` +
        `${
          args.copyDrills ? "copy drills: the random answers solved" : "oracle succeeded in"
        } ${demos.successes}` +
        `${demos.explored ? `; ${demos.explored} turns explored at random, not recorded` : ""}` +
        `${
          demos.noisyTools ? `; ${demos.noisyTools} tools printed a wrong answer, not recorded` : ""
        })`;
    console.error(`${args.out ?? "stdout"}: ${demos.records.length} ${what}`);
  });
}

// Copy drills for Search (`deno task demos --env search_v1 --copy-drills`). Every query and answer
// of search_v1 is a name copied from the question or a retrieved document: names are syllables
// generated per task, so nothing but copying predicts them. A 115k-parameter byte model trained
// on oracle play alone learns the names' look (syllables) rather than the copy, and blends
// syllables of different names (models/search_warm_team/README.md). These drills make copying the
// only way to lower the loss, on short records, so the copy mechanism (an induction circuit:
// find the earlier occurrence of what was just written, continue from there) forms first:
//   letters  "copy\n<random letters and spaces>\n"       → "#### <the same>"
//   names    "copy\n<2–5 entity names, comma-separated>\n" → "#### <the same>"
//   find     "find [17]\n[4] <name>\n[17] <name>\n..."     → "#### <the name after [17]>"
// Random letters defeat any guess from the look of a name; names and finds use the corpus's own
// syllables and endings, and a find asks for one name among several, as a query does.

import type { Rng } from "../rng.ts";
import { cap, ENV_ID, SUFFIX, SYL } from "./corpus.ts";

export type SearchDrillKind = "letters" | "names" | "find";

/** Share of each drill kind in `searchCopyDrill`'s draws. */
export const SEARCH_DRILL_MIX: Readonly<Record<SearchDrillKind, number>> = {
  letters: 0.6,
  names: 0.2,
  find: 0.2,
};

/** The env whose copy drills these are. */
export const SEARCH_DRILL_ENV = ENV_ID;

const LETTERS = [..."abcdefghijklmnopqrstuvwxyz"];
const word = (rng: Rng, n: number) => cap(Array.from({ length: n }, () => rng.pick(SYL)).join(""));

/** A name of one of the corpus's kinds: person, company, city, river, region. */
export function randomEntity(rng: Rng): string {
  const k = rng.float();
  if (k < 0.35) return `${word(rng, 2)} ${word(rng, 2)}`;
  if (k < 0.55) return `${word(rng, 2)} ${rng.pick(SUFFIX.company)}`;
  if (k < 0.75) return word(rng, 2) + rng.pick(SUFFIX.city);
  if (k < 0.88) return `${word(rng, 2)} River`;
  return `${word(rng, 2)} Province`;
}

/** 6–48 random lower-case letters with single spaces between words, capitalised. */
function randomLetters(rng: Rng): string {
  const n = 6 + rng.int(43);
  let s = "";
  for (let i = 0; i < n; i++) {
    s += i > 0 && s.at(-1) !== " " && rng.float() < 0.15 ? " " : rng.pick(LETTERS);
  }
  return cap(s.trim());
}

/** One drill of the given kind as a prompt/completion pair. */
export function searchDrill(
  kind: SearchDrillKind,
  rng: Rng,
): { prompt: string; completion: string } {
  if (kind === "letters") {
    const s = randomLetters(rng);
    return { prompt: `copy\n${s}\n`, completion: `#### ${s}` };
  }
  const names = Array.from({ length: 2 + rng.int(4) }, () => randomEntity(rng));
  if (kind === "names") {
    return { prompt: `copy\n${names.join(", ")}\n`, completion: `#### ${names.join(", ")}` };
  }
  const ids = rng.shuffle(Array.from({ length: 39 }, (_, i) => i + 1)).slice(0, names.length);
  const pick = rng.int(names.length);
  const body = names.map((n, i) => `[${ids[i]}] ${n}`).join("\n");
  return { prompt: `find [${ids[pick]}]\n${body}\n`, completion: `#### ${names[pick]}` };
}

export const SEARCH_DRILL_KINDS: readonly SearchDrillKind[] = ["letters", "names", "find"];

/** A drill whose kind is drawn from SEARCH_DRILL_MIX, restricted to `kinds` (shares renormalised). */
export function searchCopyDrill(
  rng: Rng,
  kinds: readonly SearchDrillKind[] = SEARCH_DRILL_KINDS,
): { kind: SearchDrillKind; prompt: string; completion: string } {
  const total = kinds.reduce((a, k) => a + SEARCH_DRILL_MIX[k], 0);
  let u = rng.float() * total, kind = kinds[kinds.length - 1];
  for (const k of kinds) {
    if (u < SEARCH_DRILL_MIX[k]) {
      kind = k;
      break;
    }
    u -= SEARCH_DRILL_MIX[k];
  }
  return { kind, ...searchDrill(kind, rng) };
}

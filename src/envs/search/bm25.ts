// BM25 ranking (Robertson & Zaragoza; k1 = 1.2, b = 0.75) over a small in-memory corpus. The
// corpus of one search task is ~20–40 short documents, so the index is rebuilt per query.

export interface Doc {
  id: number;
  title: string;
  text: string;
}

const STOP = new Set([
  "a",
  "an",
  "the",
  "of",
  "in",
  "on",
  "at",
  "by",
  "to",
  "is",
  "was",
  "were",
  "and",
  "or",
  "for",
  "who",
  "which",
  "what",
  "where",
  "when",
  "that",
  "this",
  "its",
  "it",
  "as",
  "with",
  "from",
  "are",
  "be",
  "did",
]);

export function tokenize(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((t) => !STOP.has(t));
}

export interface Hit {
  id: number;
  score: number;
}

/** Top `k` documents for `query`, best first; ties by id so ranking is deterministic. */
export function bm25(docs: readonly Doc[], query: string, k: number, k1 = 1.2, b = 0.75): Hit[] {
  const terms = [...new Set(tokenize(query))];
  if (terms.length === 0) return [];
  const toks = docs.map((d) => tokenize(`${d.title} ${d.text}`));
  const avg = toks.reduce((s, t) => s + t.length, 0) / Math.max(1, toks.length);
  const df = new Map<string, number>();
  for (const t of toks) for (const term of new Set(t)) df.set(term, (df.get(term) ?? 0) + 1);
  const n = docs.length;
  const hits: Hit[] = docs.map((d, i) => {
    let score = 0;
    for (const term of terms) {
      const f = toks[i].filter((x) => x === term).length;
      if (f === 0) continue;
      const nq = df.get(term) ?? 0;
      const idf = Math.log(1 + (n - nq + 0.5) / (nq + 0.5));
      score += idf * (f * (k1 + 1)) / (f + k1 * (1 - b + (b * toks[i].length) / avg));
    }
    return { id: d.id, score };
  });
  return hits.filter((h) => h.score > 0).sort((x, y) => y.score - x.score || x.id - y.id).slice(
    0,
    k,
  );
}

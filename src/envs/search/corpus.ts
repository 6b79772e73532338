// A seeded world of fictional people, companies, cities and regions, written up as short
// documents, with a multi-hop question over it. Names are built from syllables per task, so no
// model can know the answers in advance: it has to retrieve them.

import { generateInSplit, intKnob, resolveDifficulty } from "../api.ts";
import type { Rng } from "../rng.ts";
import type { GenerateOptions } from "../types.ts";
import type { Doc } from "./bm25.ts";

export const ENV_ID = "search_v1";

export interface SearchDifficulty {
  [key: string]: number;
  /** Documents needed to answer (2 or 3). */
  hops: number;
  /** People in the world; companies and cities scale with it (more distractors). */
  people: number;
  /** Documents returned per query. */
  topK: number;
  /** Turns beyond `hops`: slack for a wasted query. */
  extraTurns: number;
}

export const DEFAULT_DIFFICULTY: SearchDifficulty = { hops: 2, people: 8, topK: 3, extraTurns: 1 };

export interface SearchTask {
  docs: Doc[];
  question: string;
  answer: string;
  /** The entity the question names: where the first hop starts. */
  start: string;
  /** Documents that together answer the question, in hop order. */
  gold: number[];
  /** For each gold doc, the entity it is about (its name is what a query should contain). */
  chain: string[];
  topK: number;
  maxTurns: number;
}

export const TEST_FRACTION = 0.1;

export function taskKey(t: SearchTask): string {
  return `${t.question}|${t.answer}|${
    t.docs.map((d) => d.title).join(",")
  }|${t.topK}|${t.maxTurns}`;
}

/** Syllables of every generated name. */
export const SYL = [
  "ka",
  "lo",
  "mir",
  "ven",
  "tar",
  "zu",
  "bel",
  "dro",
  "qui",
  "sen",
  "ra",
  "thal",
  "or",
  "ix",
  "pel",
  "gan",
  "sor",
  "vy",
  "lun",
  "dek",
  "fa",
  "nim",
  "os",
  "rhe",
  "kel",
  "ba",
  "tuv",
  "em",
  "wen",
  "jor",
];
const PROFESSIONS = [
  "engineer",
  "painter",
  "botanist",
  "sailor",
  "architect",
  "chemist",
  "poet",
  "surveyor",
];
/** Name endings of companies (a word) and cities (glued on). */
export const SUFFIX = {
  company: ["Labs", "Works", "Guild", "Foundry"],
  city: ["mar", "holm", "ford", "vale"],
};

/** The name with its first letter upper-cased. */
export function cap(s: string): string {
  return s[0].toUpperCase() + s.slice(1);
}

/** A fresh name of `n` syllables that `used` does not contain yet. */
function freshName(rng: Rng, used: Set<string>, n: number, suffix = ""): string {
  for (;;) {
    let w = "";
    for (let i = 0; i < n; i++) w += rng.pick(SYL);
    const name = cap(w) + suffix;
    if (!used.has(name.toLowerCase())) {
      used.add(name.toLowerCase());
      return name;
    }
  }
}

interface World {
  people: { name: string; job: string; city: number }[];
  companies: { name: string; founder: number; city: number; year: number }[];
  cities: { name: string; region: number; river: string }[];
  regions: string[];
}

function makeWorld(rng: Rng, nPeople: number): World {
  const used = new Set<string>();
  const nCities = Math.max(3, Math.ceil(nPeople * 0.75));
  const regions = [0, 1, 2].map(() => `${freshName(rng, used, 2)} Province`);
  const cities = Array.from({ length: nCities }, (_, i) => ({
    name: freshName(rng, used, 2, rng.pick(SUFFIX.city)),
    region: i < 3 ? i : rng.int(3),
    river: `${freshName(rng, used, 2)} River`,
  }));
  const people = Array.from({ length: nPeople }, () => ({
    name: `${freshName(rng, used, 2)} ${freshName(rng, used, 2)}`,
    job: rng.pick(PROFESSIONS),
    city: rng.int(nCities),
  }));
  const founders = rng.shuffle([...people.keys()]);
  const companies = Array.from({ length: Math.max(3, Math.ceil(nPeople * 0.75)) }, (_, i) => ({
    name: `${freshName(rng, used, 2)} ${rng.pick(SUFFIX.company)}`,
    founder: founders[i % nPeople],
    city: rng.int(nCities),
    year: 1900 + rng.int(120),
  }));
  return { people, companies, cities, regions };
}

function writeDocs(w: World): { docs: Doc[]; person: number[]; company: number[]; city: number[] } {
  const docs: Doc[] = [];
  const add = (title: string, text: string) => docs.push({ id: docs.length, title, text }) - 1;
  const person = w.people.map((p) =>
    add(
      p.name,
      `${p.name} is a ${p.job} who was born in ${
        w.cities[p.city].name
      }. ${p.name} still visits often.`,
    )
  );
  const company = w.companies.map((c) =>
    add(
      c.name,
      `${c.name} is a company founded in ${c.year} by ${w.people[c.founder].name}. ` +
        `The headquarters of ${c.name} are in ${w.cities[c.city].name}.`,
    )
  );
  const city = w.cities.map((c) =>
    add(
      c.name,
      `${c.name} is a city in ${w.regions[c.region]}. The ${c.river} flows through ${c.name}.`,
    )
  );
  return { docs, person, company, city };
}

type Question = Pick<SearchTask, "question" | "answer" | "start" | "gold" | "chain">;

/** Question templates by hop count; each follows functional relations, so the answer is unique. */
function ask(rng: Rng, w: World, d: ReturnType<typeof writeDocs>, hops: number): Question {
  const k = rng.int(w.companies.length), co = w.companies[k];
  const founder = w.people[co.founder], birth = w.cities[founder.city];
  if (hops === 3) {
    const base = {
      start: co.name,
      gold: [d.company[k], d.person[co.founder], d.city[founder.city]],
      chain: [co.name, founder.name, birth.name],
    };
    return rng.float() < 0.5
      ? {
        ...base,
        question: `Which river flows through the birthplace of the founder of ${co.name}?`,
        answer: birth.river,
      }
      : {
        ...base,
        question: `In which region was the founder of ${co.name} born?`,
        answer: w.regions[birth.region],
      };
  }
  const pick = rng.int(3);
  if (pick === 0) {
    return {
      question: `In which city was the founder of ${co.name} born?`,
      answer: birth.name,
      start: co.name,
      gold: [d.company[k], d.person[co.founder]],
      chain: [co.name, founder.name],
    };
  }
  if (pick === 1) {
    const i = rng.int(w.people.length), p = w.people[i], c = w.cities[p.city];
    return {
      question: `Which river flows through the city where ${p.name} was born?`,
      answer: c.river,
      start: p.name,
      gold: [d.person[i], d.city[p.city]],
      chain: [p.name, c.name],
    };
  }
  const hq = w.cities[co.city];
  return {
    question: `In which region are the headquarters of ${co.name}?`,
    answer: w.regions[hq.region],
    start: co.name,
    gold: [d.company[k], d.city[co.city]],
    chain: [co.name, hq.name],
  };
}

export function generate(seed: number, opts: GenerateOptions<SearchDifficulty>): SearchTask {
  const dd = resolveDifficulty(ENV_ID, DEFAULT_DIFFICULTY, opts.difficulty);
  const hops = intKnob(ENV_ID, dd, "hops", 2, 3);
  const nPeople = intKnob(ENV_ID, dd, "people", 3, 40);
  const topK = intKnob(ENV_ID, dd, "topK", 1, 10);
  const extra = intKnob(ENV_ID, dd, "extraTurns", 0, 5);
  const env = { id: ENV_ID, testFraction: TEST_FRACTION, taskKey };
  return generateInSplit(env, seed, opts.split, (rng) => {
    const world = makeWorld(rng, nPeople);
    const docs = writeDocs(world);
    return { docs: docs.docs, ...ask(rng, world, docs, hops), topK, maxTurns: hops + extra };
  });
}

/** Lower case, punctuation and a leading "the" dropped: "The Ormir River." ≡ "ormir river". */
export function normalizeAnswer(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9 ]+/g, " ").replace(/\s+/g, " ").trim().replace(
    /^the /,
    "",
  );
}

/** Exact match after normalisation, or the gold phrase inside a short answer ("It is X."). */
export function isCorrect(answer: string, gold: string): boolean {
  const a = normalizeAnswer(answer), g = normalizeAnswer(gold);
  if (a === g) return true;
  return a.length <= g.length + 20 && ` ${a} `.includes(` ${g} `);
}

// Seeded word-problem templates for Math, by level: 1 one- or two-step integer arithmetic,
// 2 fractions, decimals, money, percentages and means, 3 algebra (linear equations, systems, ages,
// consecutive integers, work rates). Each template computes its answer natively (exact rational)
// and writes an independent JavaScript program that prints the same answer: the oracle tool's code.

import type { Rng } from "../rng.ts";

/** One generated problem; `display` is exactly what `code` prints (without the newline). */
export interface GeneratedProblem {
  question: string;
  num: number;
  den: number;
  display: string;
  code: string;
}

type Template = (rng: Rng, max: number) => GeneratedProblem | null;

/**
 * Helpers every tool program gets (prepended by the env), documented in the tool's prompt.
 * `frac` mirrors `fracText` below exactly: the oracle's printed output depends on it.
 */
export const TOOL_PRELUDE = `function gcd(a, b) {
  a = Math.abs(a); b = Math.abs(b);
  while (b) { const t = a % b; a = b; b = t; }
  return a;
}
function frac(n, d) {
  if (d < 0) { n = -n; d = -d; }
  const g = gcd(n, d) || 1;
  n /= g; d /= g;
  return d === 1 ? \`\${n}\` : \`\${n}/\${d}\`;
}`;

const NAMES = [
  "Ana",
  "Ben",
  "Chen",
  "Dara",
  "Eli",
  "Fay",
  "Gus",
  "Hana",
  "Ivo",
  "Jia",
  "Kai",
  "Lena",
  "Maya",
  "Noor",
  "Omar",
  "Pia",
  "Raj",
  "Sara",
  "Tom",
  "Uma",
  "Vik",
  "Wen",
  "Yara",
  "Zoe",
];
const ITEMS = ["apples", "pencils", "stickers", "marbles", "cards", "books", "shells", "coins"];

function ri(rng: Rng, lo: number, hi: number): number {
  return lo + rng.int(Math.max(1, hi - lo + 1));
}

function gcd(a: number, b: number): number {
  a = Math.abs(a);
  b = Math.abs(b);
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Same output as the prelude's `frac(n, d)`: reduced, sign on the numerator, "n" when whole. */
export function fracText(n: number, d: number): string {
  if (d < 0) [n, d] = [-n, -d];
  const g = gcd(n, d) || 1;
  n /= g;
  d /= g;
  return d === 1 ? `${n}` : `${n}/${d}`;
}

/** A denominator with no prime factors but 2 and 5: the decimal terminates. */
function terminates(n: number, d: number): boolean {
  d /= gcd(n, d) || 1;
  while (d % 2 === 0) d /= 2;
  while (d % 5 === 0) d /= 5;
  return d === 1;
}

function integer(v: number, code: string): Omit<GeneratedProblem, "question"> {
  return { num: v, den: 1, display: `${v}`, code };
}

/**
 * A rational answer printed as a decimal when it terminates (JS prints the exact decimal of the
 * correctly rounded quotient), else as a reduced fraction through the prelude's `frac`.
 */
function rational(
  n: number,
  d: number,
  setup: string,
  numExpr: string,
  denExpr: string,
): Omit<GeneratedProblem, "question"> {
  const dec = terminates(n, d);
  const print = dec ? `${numExpr} / (${denExpr})` : `frac(${numExpr}, ${denExpr})`;
  return {
    num: n,
    den: d,
    display: dec ? String(n / d) : fracText(n, d),
    code: `${setup}console.log(${print});\n`,
  };
}

function signed(v: number): string {
  return v < 0 ? `- ${-v}` : `+ ${v}`;
}

const LEVEL1: Template[] = [
  (rng, max) => {
    const who = rng.pick(NAMES), it = rng.pick(ITEMS), a = ri(rng, 2, max), b = ri(rng, 2, max);
    return {
      question: `${who} has ${a} ${it} and buys ${b} more. How many ${it} does ${who} have now?`,
      ...integer(a + b, `const had = ${a}, bought = ${b};\nconsole.log(had + bought);\n`),
    };
  },
  (rng, max) => {
    const who = rng.pick(NAMES), it = rng.pick(ITEMS), a = ri(rng, 3, max), b = ri(rng, 1, a - 1);
    return {
      question: `${who} had ${a} ${it} and gave ${b} of them to a friend. How many ${it} are left?`,
      ...integer(a - b, `const had = ${a}, given = ${b};\nconsole.log(had - given);\n`),
    };
  },
  (rng, max) => {
    const it = rng.pick(ITEMS), rows = ri(rng, 2, 12), per = ri(rng, 2, max);
    return {
      question:
        `A shelf has ${rows} rows with ${per} ${it} in each row. How many ${it} are on the shelf?`,
      ...integer(
        rows * per,
        `const rows = ${rows}, perRow = ${per};\nconsole.log(rows * perRow);\n`,
      ),
    };
  },
  (rng, max) => {
    const who = rng.pick(NAMES), it = rng.pick(ITEMS), friends = ri(rng, 2, 12);
    const each = ri(rng, 2, max), total = friends * each;
    return {
      question:
        `${who} shares ${total} ${it} equally among ${friends} friends. How many ${it} does each friend get?`,
      ...integer(
        each,
        `const total = ${total}, friends = ${friends};\nconsole.log(total / friends);\n`,
      ),
    };
  },
  (rng) => {
    const who = rng.pick(NAMES), it = rng.pick(ITEMS), packs = ri(rng, 2, 9), per = ri(rng, 2, 12);
    const given = ri(rng, 1, packs * per - 1);
    return {
      question:
        `${who} buys ${packs} packs of ${per} ${it} and gives away ${given} ${it}. How many ${it} are left?`,
      ...integer(
        packs * per - given,
        `const packs = ${packs}, perPack = ${per}, given = ${given};\nconsole.log(packs * perPack - given);\n`,
      ),
    };
  },
  (rng, max) => {
    const it = rng.pick(ITEMS), k = ri(rng, 3, 12), n = ri(rng, k + 1, Math.max(k + 2, 2 * max));
    return {
      question:
        `${n} ${it} are packed into bags of ${k}. How many ${it} are left over after filling as many full bags as possible?`,
      ...integer(n % k, `const n = ${n}, perBag = ${k};\nconsole.log(n % perBag);\n`),
    };
  },
];

const LEVEL2: Template[] = [
  (rng, max) => {
    const who = rng.pick(NAMES), it = rng.pick(ITEMS), q = ri(rng, 2, 8), p = ri(rng, 1, q - 1);
    if (gcd(p, q) !== 1) return null;
    const n = q * ri(rng, 1, Math.max(1, Math.floor(max / q)));
    return {
      question:
        `${who} has ${n} ${it} and gives away ${p}/${q} of them. How many ${it} does ${who} have left?`,
      ...integer(
        n - (n * p) / q,
        `const total = ${n}, p = ${p}, q = ${q};\nconsole.log(total - total * p / q);\n`,
      ),
    };
  },
  (rng) => {
    const who = rng.pick(NAMES), b = ri(rng, 2, 9), d = ri(rng, 2, 9);
    const a = ri(rng, 1, b - 1), c = ri(rng, 1, d - 1);
    if (gcd(a, b) !== 1 || gcd(c, d) !== 1) return null;
    const n = a * d + c * b, den = b * d;
    return {
      question:
        `${who} drinks ${a}/${b} of a litre of juice in the morning and ${c}/${d} of a litre in the afternoon. How many litres does ${who} drink in total?`,
      num: n,
      den,
      display: fracText(n, den),
      code:
        `// ${a}/${b} + ${c}/${d} over a common denominator\nconsole.log(frac(${a} * ${d} + ${c} * ${b}, ${b} * ${d}));\n`,
    };
  },
  (rng) => {
    const b = ri(rng, 2, 9), a = ri(rng, 1, 2 * b), k = ri(rng, 2, 6);
    if (gcd(a, b) !== 1) return null;
    return {
      question:
        `A ribbon ${a}/${b} m long is cut into ${k} equal pieces. How long is each piece, in metres?`,
      num: a,
      den: b * k,
      display: fracText(a, b * k),
      code:
        `const length = [${a}, ${b}], pieces = ${k};\nconsole.log(frac(length[0], length[1] * pieces));\n`,
    };
  },
  (rng) => {
    const x = ri(rng, 50, 999), y = ri(rng, 25, 499), k = ri(rng, 2, 6), j = ri(rng, 1, 4);
    const cents = k * x + j * y;
    const dollars = (c: number) => `${Math.floor(c / 100)}.${String(c % 100).padStart(2, "0")}`;
    return {
      question: `A notebook costs $${dollars(x)} and a pen costs $${
        dollars(y)
      }. How much do ${k} notebooks and ${j} pen${j === 1 ? "" : "s"} cost, in dollars?`,
      num: cents,
      den: 100,
      display: dollars(cents),
      code:
        `const notebook = ${x}, pen = ${y}; // in cents\nconst cents = ${k} * notebook + ${j} * pen;\n` +
        `console.log(Math.floor(cents / 100) + "." + String(cents % 100).padStart(2, "0"));\n`,
    };
  },
  (rng) => {
    const price = 4 * ri(rng, 5, 50), off = rng.pick([5, 10, 15, 20, 25, 30, 40, 50, 60, 75]);
    return {
      question:
        `A jacket costs $${price}. It is on sale for ${off}% off. What is the sale price, in dollars?`,
      ...rational(
        price * (100 - off),
        100,
        `const price = ${price}, off = ${off};\n`,
        "price * (100 - off)",
        "100",
      ),
    };
  },
  (rng) => {
    const who = rng.pick(NAMES), k = rng.pick([2, 4, 5, 8]);
    const scores = Array.from({ length: k }, () => ri(rng, 40, 100));
    const sum = scores.reduce((s, x) => s + x, 0);
    return {
      question: `${who}'s scores on ${k} tests are ${scores.join(", ")}. What is the mean score?`,
      ...rational(
        sum,
        k,
        `const scores = [${scores.join(", ")}];\n`,
        "scores.reduce((s, x) => s + x, 0)",
        "scores.length",
      ),
    };
  },
  (rng, max) => {
    const a = rng.pick([2, 4, 5, 8, 10]), c = ri(rng, 3, max), b = ri(rng, 2, 12);
    if (b === a) return null;
    return {
      question:
        `${a} kg of rice cost $${c}. At the same price per kilogram, how much do ${b} kg cost, in dollars?`,
      ...rational(c * b, a, `const kg = ${a}, cost = ${c}, want = ${b};\n`, "cost * want", "kg"),
    };
  },
];

const LEVEL3: Template[] = [
  (rng, max) => {
    const q = rng.pick([1, 1, 1, 2, 3, 4]), k = ri(rng, 1, 4), a = q * k;
    const p = ri(rng, -Math.floor(max / 2), Math.floor(max / 2));
    const b = ri(rng, 1, 20) * (rng.int(2) ? 1 : -1);
    if (p === 0 || gcd(p, q) !== 1 || a === 1) return null;
    const c = k * p + b;
    return {
      question: `Solve for x: ${a}x ${signed(b)} = ${c}.`,
      num: c - b,
      den: a,
      display: fracText(c - b, a),
      code:
        `const a = ${a}, b = ${b}, c = ${c};\n// a*x + b = c  =>  x = (c - b) / a\nconsole.log(frac(c - b, a));\n`,
    };
  },
  (rng, max) => {
    const x = ri(rng, 2, max), a = ri(rng, 2, 9), b = ri(rng, 1, 30), c = a * x - b;
    return {
      question:
        `When a number is multiplied by ${a} and then ${b} is subtracted, the result is ${c}. What is the number?`,
      ...integer(x, `const a = ${a}, b = ${b}, c = ${c};\nconsole.log((c + b) / a);\n`),
    };
  },
  (rng, max) => {
    const big = ri(rng, 5, max), small = ri(rng, 1, big - 1), askBig = rng.int(2) === 1;
    const s = big + small, d = big - small;
    return {
      question: `The sum of two numbers is ${s} and their difference is ${d}. What is the ${
        askBig ? "larger" : "smaller"
      } number?`,
      ...integer(
        askBig ? big : small,
        `const sum = ${s}, diff = ${d};\nconsole.log((sum ${askBig ? "+" : "-"} diff) / 2);\n`,
      ),
    };
  },
  (rng) => {
    const [x, y] = [rng.pick(NAMES), rng.pick(NAMES)];
    const b = ri(rng, 2, 15), k = ri(rng, 3, 6), m = ri(rng, 2, k - 1);
    const n = (b * (k - m)) / (m - 1);
    if (x === y || !Number.isInteger(n) || n < 1 || n > 40) return null;
    return {
      question:
        `${x} is ${k} times as old as ${y}. In ${n} years, ${x} will be ${m} times as old as ${y}. How old is ${y} now?`,
      ...integer(
        b,
        `const k = ${k}, m = ${m}, n = ${n};\n// A = k*B and A + n = m*(B + n)  =>  B = n*(m - 1)/(k - m)\n` +
          `console.log(n * (m - 1) / (k - m));\n`,
      ),
    };
  },
  (rng, max) => {
    const k = ri(rng, 3, 6), x = ri(rng, 1, max), sum = k * x + (k * (k - 1)) / 2;
    return {
      question: `The sum of ${k} consecutive integers is ${sum}. What is the smallest of them?`,
      ...integer(x, `const k = ${k}, sum = ${sum};\nconsole.log((sum - k * (k - 1) / 2) / k);\n`),
    };
  },
  (rng) => {
    const a = ri(rng, 2, 12), b = ri(rng, 2, 12);
    if (a === b) return null;
    return {
      question:
        `Pipe A fills a tank in ${a} hours and pipe B fills it in ${b} hours. Working together, how many hours do they take to fill the tank?`,
      num: a * b,
      den: a + b,
      display: fracText(a * b, a + b),
      code:
        `const a = ${a}, b = ${b};\n// rates 1/a + 1/b per hour  =>  time a*b/(a + b)\nconsole.log(frac(a * b, a + b));\n`,
    };
  },
  (rng) => {
    const x = ri(rng, -9, 9), y = ri(rng, -9, 9);
    const [a, b, d, e] = [ri(rng, 1, 9), ri(rng, 1, 9), ri(rng, 1, 9), ri(rng, 1, 9)];
    if ((x === 0 && y === 0) || a * e - b * d === 0) return null;
    const c = a * x + b * y, f = d * x + e * y;
    return {
      question: `If ${a}x + ${b}y = ${c} and ${d}x + ${e}y = ${f}, what is x + y?`,
      ...integer(
        x + y,
        `const a = ${a}, b = ${b}, c = ${c}, d = ${d}, e = ${e}, f = ${f};\nconst det = a * e - b * d;\n` +
          `const x = (c * e - b * f) / det, y = (a * f - c * d) / det;\nconsole.log(String(x + y));\n`,
      ),
    };
  },
  (rng, max) => {
    const w = ri(rng, 2, Math.max(3, Math.floor(max / 2))), k = ri(rng, 1, 10), p = 2 * (2 * w + k);
    return {
      question:
        `A rectangle is ${k} cm longer than it is wide, and its perimeter is ${p} cm. What is its area in square centimetres?`,
      ...integer(
        w * (w + k),
        `const perimeter = ${p}, k = ${k};\nconst w = (perimeter / 2 - k) / 2;\nconsole.log(w * (w + k));\n`,
      ),
    };
  },
];

export const TEMPLATES: readonly (readonly Template[])[] = [LEVEL1, LEVEL2, LEVEL3];

/** One problem of `level` (1–3), or null when the drawn numbers do not fit its template. */
export function drawProblem(rng: Rng, level: number, max: number): GeneratedProblem | null {
  return rng.pick(TEMPLATES[level - 1])(rng, max);
}

// Exact answer checking for Math: an answer string is reduced to a canonical form, and two answers
// are equal when their canonical forms are. Numbers are compared as exact rationals (BigInt), so
// "3/4", "0.75", "\frac{3}{4}", "\boxed{0.75}" and "$.750$" all agree, while "0.333" ≠ "1/3".
//
// Equivalence rules, in the order they apply:
//  1. The content of the last `\boxed{…}` (or `\fbox{…}`) is the answer when one is present.
//  2. Dropped: `$`, `\(` `\)` `\[` `\]`, `\left` `\right`, `\displaystyle`, LaTeX spacing (`\,`
//     `\;` `\:` `\!` `~`), degree marks, a final full stop; `\dfrac`/`\tfrac` read as `\frac`;
//     `\text{u}`, `\mathrm{u}`, `\mbox{u}`, `\textbf{u}` read as `u`; the Unicode minus as `-`.
//  3. A leading "answer:" or a single assignment "x =" is dropped; a trailing `%` is dropped (the
//     number before it is the answer: "25%" ≡ "25", not 0.25).
//  4. Numbers: integers (leading zeros and "+" allowed, "-0" is 0), decimals (".5", "2."), e-notation
//     and `a \times 10^{k}`, thousands groups ("1,000" and "1 000", only in groups of three),
//     fractions "a/b" and `\frac{a}{b}` (parts may be signed decimals), `\frac12`, mixed numbers
//     "1 1/2" and `1\frac{1}{2}` (proper fraction part; the sign applies to the whole).
//  5. A number followed only by words of two letters or more ("12 apples", "3/4 litres") is that
//     number; one-letter tails ("5x", "3 m") and "pi", "sqrt", "log", "ln"... are not unit words.
//  6. Anything else is compared as text: lower-cased with all whitespace removed. Symbolic answers
//     (`\sqrt{2}`, `x+1`) therefore only match when written the same way.
// Canonical numbers are "p" or "p/q" with q > 1 and gcd(p, q) = 1; canonical text is "text:…", so
// text never equals a number ("1 3/2", not a mixed number, does not become 13/2).

/** Canonical form of an answer, or null when nothing is left to compare. */
export function normalizeAnswer(raw: string): string | null {
  let s = raw.trim();
  if (s === "") return null;
  if (/\\(boxed|fbox)/.test(s)) {
    const inner = lastBoxed(s);
    if (inner === null) return null;
    s = inner;
  }
  s = cleanLatex(s);
  if (s === "") return null;
  const q = parseNumber(s) ?? parseWithUnits(s);
  if (q !== null) return formatRational(q);
  const text = s.toLowerCase().replace(/\s+/g, "");
  return text === "" ? null : `text:${text}`;
}

/** True when both answers normalise to the same non-empty canonical form. */
export function answersEqual(a: string, b: string): boolean {
  const x = normalizeAnswer(a);
  return x !== null && x === normalizeAnswer(b);
}

/**
 * The content of the last `\boxed{…}` (balanced braces, so `\boxed{\frac{3}{4}}` works), or null
 * when there is no box or its braces do not close.
 */
export function lastBoxed(text: string): string | null {
  const re = /\\(?:boxed|fbox)\s*\{/g;
  let start = -1;
  for (const m of text.matchAll(re)) start = m.index! + m[0].length;
  if (start < 0) return null;
  let depth = 1;
  for (let i = start; i < text.length; i++) {
    if (text[i] === "{") depth++;
    else if (text[i] === "}" && --depth === 0) return text.slice(start, i).trim();
  }
  return null;
}

function cleanLatex(input: string): string {
  let s = input.replace(/\u2212/g, "-");
  s = s.replace(/\\(?:text|textbf|mathrm|mbox|textrm)\s*\{([^{}]*)\}/g, " $1 ");
  s = s.replace(/\\[dt]frac/g, "\\frac");
  s = s.replace(/\\left|\\right|\\displaystyle/g, "");
  s = s.replace(/\\[,;:! ]|~/g, " ");
  s = s.replace(/\\\(|\\\)|\\\[|\\\]|\$/g, "");
  s = s.replace(/\^\s*\{?\s*\\circ\s*\}?|°/g, "");
  s = s.replace(/\\%/g, "%");
  s = s.trim().replace(/\.$/, "").trim();
  s = s.replace(/^(?:the\s+)?(?:final\s+)?answer\s*(?:is|:|=)?\s*/i, "");
  s = s.replace(/^[a-zA-Z]\w*\s*=\s*(?=\S)/, "");
  s = s.replace(/\s*%$/, "");
  return s.trim();
}

/** An exact rational [numerator, denominator], denominator > 0, not necessarily reduced. */
type Rational = [bigint, bigint];

const DEC = String.raw`[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?`;
const RE_DEC = new RegExp(`^${DEC}$`);
const RE_SLASH = new RegExp(`^(${DEC})\\s*/\\s*(${DEC})$`);
const RE_FRAC = /^([+-]?)\s*\\frac\s*\{([^{}]+)\}\s*\{([^{}]+)\}$/;
const RE_FRAC_SHORT = /^([+-]?)\s*\\frac(\d)(\d)$/;
const RE_MIXED_LATEX = /^([+-]?)(\d+)\s*\\frac\s*\{(\d+)\}\s*\{(\d+)\}$/;
const RE_MIXED = /^([+-]?)(\d+)\s+(\d+)\s*\/\s*(\d+)$/;
const RE_SCI = new RegExp(
  String.raw`^(${DEC})\s*\\(?:times|cdot)\s*10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?$`,
);
const RE_THOUSANDS = /^[+-]?\d{1,3}(?:(?:,|\{,\}|\s)\d{3})+(?:\.\d+)?$/;

/** A plain decimal / integer / e-notation string as an exact rational. */
function parseDecimal(s: string): Rational | null {
  if (!RE_DEC.test(s)) return null;
  const m = /^([+-]?)(\d*)\.?(\d*)(?:[eE]([+-]?\d+))?$/.exec(s)!;
  const [, sign, whole, frac, exp] = m;
  const e = Number(exp ?? "0") - frac.length;
  if (Math.abs(e) > 400) return null; // absurd exponents: compare as text instead
  let num = BigInt((whole || "0") + frac);
  let den = 1n;
  if (e >= 0) num *= 10n ** BigInt(e);
  else den = 10n ** BigInt(-e);
  return [sign === "-" ? -num : num, den];
}

function divide(a: Rational, b: Rational): Rational | null {
  if (b[0] === 0n) return null;
  const num = a[0] * b[1], den = a[1] * b[0];
  return den < 0n ? [-num, -den] : [num, den];
}

function negateIf(neg: boolean, q: Rational | null): Rational | null {
  return q === null ? null : neg ? [-q[0], q[1]] : q;
}

function mixed(sign: string, whole: string, n: string, d: string): Rational | null {
  const w = BigInt(whole), num = BigInt(n), den = BigInt(d);
  if (den === 0n || num >= den) return null; // only proper fraction parts read as mixed numbers
  return negateIf(sign === "-", [w * den + num, den]);
}

/** The whole string as one number, or null. */
function parseNumber(input: string): Rational | null {
  let s = input.trim();
  if (RE_THOUSANDS.test(s)) s = s.replace(/\{,\}|,|\s/g, "");
  let m: RegExpExecArray | null;
  if ((m = RE_MIXED_LATEX.exec(s))) return mixed(m[1], m[2], m[3], m[4]);
  if ((m = RE_MIXED.exec(s))) return mixed(m[1], m[2], m[3], m[4]);
  if ((m = RE_FRAC.exec(s))) {
    const a = parseDecimal(m[2].trim()), b = parseDecimal(m[3].trim());
    return a && b ? negateIf(m[1] === "-", divide(a, b)) : null;
  }
  if ((m = RE_FRAC_SHORT.exec(s))) {
    return negateIf(m[1] === "-", divide([BigInt(m[2]), 1n], [BigInt(m[3]), 1n]));
  }
  if ((m = RE_SLASH.exec(s))) {
    const a = parseDecimal(m[1]), b = parseDecimal(m[2]);
    return a && b ? divide(a, b) : null;
  }
  if ((m = RE_SCI.exec(s))) {
    const k = Number(m[2]);
    return Math.abs(k) > 400 ? null : parseDecimal(`${m[1]}e${k}`);
  }
  return parseDecimal(s);
}

const NOT_UNITS = new Set(["pi", "sqrt", "root", "log", "ln", "sin", "cos", "tan", "exp", "i"]);

/** "12 apples", "3/4 litres": a number followed only by unit words (two letters or more). */
function parseWithUnits(s: string): Rational | null {
  const m = /^(.*?\d\.?)\s*([a-zA-Z][a-zA-Z\s.]*)$/.exec(s);
  if (!m) return null;
  const words = m[2].trim().replace(/\.$/, "").split(/\s+/);
  if (words.some((w) => w.length < 2 || NOT_UNITS.has(w.toLowerCase()))) return null;
  return parseNumber(m[1]);
}

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

function formatRational([num, den]: Rational): string {
  const g = gcd(num, den) || 1n;
  const n = num / g, d = den / g;
  return d === 1n ? n.toString() : `${n}/${d}`;
}

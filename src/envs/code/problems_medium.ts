// Shipped Code problems, difficulty 2 (medium): a little algorithm (stack, two pointers, counting,
// nested loops), written for this project. Statements pin down ties, order and edge cases.

import { type CodeProblem, tc } from "./problem.ts";

export const MEDIUM: CodeProblem[] = [
  {
    id: "two_sum",
    difficulty: 2,
    fnName: "twoSum",
    signature: "function twoSum(nums, target)",
    statement:
      "Return [i, j] with i < j and nums[i] + nums[j] === target. If several pairs work, choose the smallest j, and for that j the smallest i. Return [] when no pair works.",
    solution: `function twoSum(nums, target) {
  for (let j = 1; j < nums.length; j++) {
    for (let i = 0; i < j; i++) if (nums[i] + nums[j] === target) return [i, j];
  }
  return [];
}
`,
    tests: [
      tc([[2, 7, 11, 15], 9], [0, 1]),
      tc([[3, 2, 4], 6], [1, 2]),
      tc([[3, 3], 6], [0, 1]),
      tc([[1, 2], 10], []),
      tc([[], 0], []),
      tc([[1, 5, 1, 5], 6], [0, 1]),
    ],
  },
  {
    id: "is_balanced",
    difficulty: 2,
    fnName: "isBalanced",
    signature: "function isBalanced(s)",
    statement:
      "Return true if the brackets (), [] and {} in s are balanced and properly nested; all other characters are ignored.",
    solution: `function isBalanced(s) {
  const stack = [], pairs = { ")": "(", "]": "[", "}": "{" };
  for (const ch of s) {
    if ("([{".includes(ch)) stack.push(ch);
    else if (ch in pairs && stack.pop() !== pairs[ch]) return false;
  }
  return stack.length === 0;
}
`,
    tests: [
      tc(["([]{})"], true),
      tc(["([)]"], false),
      tc([""], true),
      tc(["(("], false),
      tc(["a(b)c"], true),
      tc(["}{"], false),
    ],
  },
  {
    id: "flatten",
    difficulty: 2,
    fnName: "flatten",
    signature: "function flatten(arr)",
    statement:
      "Flatten arrays nested to any depth into one array, keeping the order of the elements.",
    solution: `function flatten(arr) {
  const out = [];
  for (const x of arr) {
    if (Array.isArray(x)) out.push(...flatten(x));
    else out.push(x);
  }
  return out;
}
`,
    tests: [
      tc([[1, [2, [3, [4]]], 5]], [1, 2, 3, 4, 5]),
      tc([[]], []),
      tc([[[], [[]]]], []),
      tc([[1, 2]], [1, 2]),
      tc([[["a"], "b"]], ["a", "b"]),
    ],
  },
  {
    id: "chunk",
    difficulty: 2,
    fnName: "chunk",
    signature: "function chunk(arr, size)",
    statement:
      "Split arr into consecutive pieces of length size (an integer >= 1) and return the array of pieces; the last piece may be shorter. chunk([], n) is [].",
    solution: `function chunk(arr, size) {
  const out = [];
  for (let i = 0; i < arr.length; i += size) out.push(arr.slice(i, i + size));
  return out;
}
`,
    tests: [
      tc([[1, 2, 3, 4, 5], 2], [[1, 2], [3, 4], [5]]),
      tc([[], 3], []),
      tc([[1, 2, 3], 3], [[1, 2, 3]]),
      tc([[1, 2], 5], [[1, 2]]),
      tc([[1, 2, 3], 1], [[1], [2], [3]]),
    ],
  },
  {
    id: "is_anagram",
    difficulty: 2,
    fnName: "isAnagram",
    signature: "function isAnagram(a, b)",
    statement:
      "Return true if a and b use exactly the same characters the same number of times, ignoring case and spaces.",
    solution: `function isAnagram(a, b) {
  const key = (s) => s.toLowerCase().replace(/ /g, "").split("").sort().join("");
  return key(a) === key(b);
}
`,
    tests: [
      tc(["listen", "silent"], true),
      tc(["Dormitory", "dirty room"], true),
      tc(["abc", "abd"], false),
      tc(["", ""], true),
      tc(["aab", "abb"], false),
    ],
  },
  {
    id: "fibonacci",
    difficulty: 2,
    fnName: "fibonacci",
    signature: "function fibonacci(n)",
    statement:
      "Return the n-th Fibonacci number, where fibonacci(0) = 0, fibonacci(1) = 1 and each next one is the sum of the previous two (0 <= n <= 70). It must be fast for n = 70.",
    solution: `function fibonacci(n) {
  let a = 0, b = 1;
  for (let i = 0; i < n; i++) [a, b] = [b, a + b];
  return a;
}
`,
    tests: [
      tc([0], 0),
      tc([1], 1),
      tc([2], 1),
      tc([10], 55),
      tc([50], 12586269025),
      tc([70], 190392490709135),
    ],
  },
  {
    id: "prime_factors",
    difficulty: 2,
    fnName: "primeFactors",
    signature: "function primeFactors(n)",
    statement:
      "Return the prime factors of the integer n >= 2 in ascending order, each repeated as often as it divides n.",
    solution: `function primeFactors(n) {
  const out = [];
  for (let p = 2; p * p <= n; p++) {
    while (n % p === 0) { out.push(p); n /= p; }
  }
  if (n > 1) out.push(n);
  return out;
}
`,
    tests: [
      tc([12], [2, 2, 3]),
      tc([13], [13]),
      tc([360], [2, 2, 2, 3, 3, 5]),
      tc([2], [2]),
      tc([8633], [89, 97]),
    ],
  },
  {
    id: "is_prime",
    difficulty: 2,
    fnName: "isPrime",
    signature: "function isPrime(n)",
    statement:
      "Return true if the integer n is a prime number; 0, 1 and negative numbers are not prime.",
    solution: `function isPrime(n) {
  if (n < 2) return false;
  for (let d = 2; d * d <= n; d++) if (n % d === 0) return false;
  return true;
}
`,
    tests: [
      tc([2], true),
      tc([1], false),
      tc([0], false),
      tc([-7], false),
      tc([97], true),
      tc([91], false),
      tc([7919], true),
    ],
  },
  {
    id: "word_frequency",
    difficulty: 2,
    fnName: "wordFrequency",
    signature: "function wordFrequency(s)",
    statement:
      "Return an object mapping each word of s, lower-cased, to the number of times it occurs. Words are maximal runs of the letters a-z (in any case); every other character separates words.",
    solution: `function wordFrequency(s) {
  const out = {};
  for (const w of s.toLowerCase().match(/[a-z]+/g) || []) out[w] = (out[w] || 0) + 1;
  return out;
}
`,
    tests: [
      tc(["The cat and the hat"], { the: 2, cat: 1, and: 1, hat: 1 }),
      tc([""], {}),
      tc(["Hi! hi, HI."], { hi: 3 }),
      tc(["don't stop"], { don: 1, t: 1, stop: 1 }),
      tc(["a1b"], { a: 1, b: 1 }),
    ],
  },
  {
    id: "rotate_array",
    difficulty: 2,
    fnName: "rotateArray",
    signature: "function rotateArray(arr, k)",
    statement:
      "Return a new array: arr rotated to the right by k steps (k is an integer >= 0 and may exceed the length). rotateArray([1, 2, 3], 1) is [3, 1, 2].",
    solution: `function rotateArray(arr, k) {
  const n = arr.length;
  if (n === 0) return [];
  const r = k % n;
  return arr.slice(n - r).concat(arr.slice(0, n - r));
}
`,
    tests: [
      tc([[1, 2, 3, 4, 5], 2], [4, 5, 1, 2, 3]),
      tc([[1, 2, 3], 0], [1, 2, 3]),
      tc([[1, 2, 3], 4], [3, 1, 2]),
      tc([[], 3], []),
      tc([[1, 2, 3], 3], [1, 2, 3]),
    ],
  },
  {
    id: "run_length_encode",
    difficulty: 2,
    fnName: "runLengthEncode",
    signature: "function runLengthEncode(s)",
    statement:
      'Compress each run of a repeated character in s as the run length followed by the character, e.g. "aaabcc" becomes "3a1b2c". The empty string stays empty.',
    solution: `function runLengthEncode(s) {
  let out = "";
  for (let i = 0; i < s.length;) {
    let j = i;
    while (j < s.length && s[j] === s[i]) j++;
    out += (j - i) + s[i];
    i = j;
  }
  return out;
}
`,
    tests: [
      tc([""], ""),
      tc(["a"], "1a"),
      tc(["aaabcc"], "3a1b2c"),
      tc(["abab"], "1a1b1a1b"),
      tc(["zzzzzzzzzzzz"], "12z"),
    ],
  },
  {
    id: "binary_search",
    difficulty: 2,
    fnName: "binarySearch",
    signature: "function binarySearch(sorted, x)",
    statement:
      "sorted is an array of distinct numbers in ascending order. Return the index of x in it, or -1 if x is absent.",
    solution: `function binarySearch(sorted, x) {
  let lo = 0, hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] === x) return mid;
    if (sorted[mid] < x) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
`,
    tests: [
      tc([[1, 3, 5, 7], 5], 2),
      tc([[1, 3, 5, 7], 4], -1),
      tc([[], 1], -1),
      tc([[2], 2], 0),
      tc([[1, 3, 5, 7], 7], 3),
      tc([[1, 3, 5, 7], 1], 0),
    ],
  },
  {
    id: "merge_sorted",
    difficulty: 2,
    fnName: "mergeSorted",
    signature: "function mergeSorted(a, b)",
    statement:
      "Merge the ascending arrays a and b into one ascending array (keep repeated values).",
    solution: `function mergeSorted(a, b) {
  const out = [];
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i] <= b[j])) out.push(a[i++]);
    else out.push(b[j++]);
  }
  return out;
}
`,
    tests: [
      tc([[1, 3, 5], [2, 4]], [1, 2, 3, 4, 5]),
      tc([[], [1]], [1]),
      tc([[], []], []),
      tc([[1, 1], [1]], [1, 1, 1]),
      tc([[-3, 0], [-5, 10]], [-5, -3, 0, 10]),
    ],
  },
  {
    id: "second_largest",
    difficulty: 2,
    fnName: "secondLargest",
    signature: "function secondLargest(nums)",
    statement:
      "Return the second largest distinct value in nums, or null when nums has fewer than two distinct values.",
    solution: `function secondLargest(nums) {
  const distinct = [...new Set(nums)].sort((a, b) => b - a);
  return distinct.length < 2 ? null : distinct[1];
}
`,
    tests: [
      tc([[3, 1, 4, 4]], 3),
      tc([[5, 5]], null),
      tc([[]], null),
      tc([[-1, -2]], -2),
      tc([[10]], null),
    ],
  },
  {
    id: "to_binary",
    difficulty: 2,
    fnName: "toBinary",
    signature: "function toBinary(n)",
    statement:
      'Return the binary representation of the integer n >= 0 as a string without leading zeros ("0" for 0).',
    solution: `function toBinary(n) {
  if (n === 0) return "0";
  let out = "";
  while (n > 0) { out = (n % 2) + out; n = Math.floor(n / 2); }
  return out;
}
`,
    tests: [tc([0], "0"), tc([5], "101"), tc([8], "1000"), tc([255], "11111111"), tc([1], "1")],
  },
  {
    id: "roman_to_int",
    difficulty: 2,
    fnName: "romanToInt",
    signature: "function romanToInt(s)",
    statement:
      "Convert a Roman numeral between 1 and 3999 to an integer. Symbols: I 1, V 5, X 10, L 50, C 100, D 500, M 1000; a smaller symbol before a larger one is subtracted (IV 4, IX 9, XL 40, XC 90, CD 400, CM 900).",
    solution: `function romanToInt(s) {
  const v = { I: 1, V: 5, X: 10, L: 50, C: 100, D: 500, M: 1000 };
  let total = 0;
  for (let i = 0; i < s.length; i++) {
    const cur = v[s[i]], next = v[s[i + 1]] || 0;
    total += cur < next ? -cur : cur;
  }
  return total;
}
`,
    tests: [
      tc(["III"], 3),
      tc(["IV"], 4),
      tc(["IX"], 9),
      tc(["LVIII"], 58),
      tc(["MCMXCIV"], 1994),
      tc(["MMMCMXCIX"], 3999),
    ],
  },
  {
    id: "longest_word",
    difficulty: 2,
    fnName: "longestWord",
    signature: "function longestWord(s)",
    statement:
      'Return the longest word of s, where words are separated by spaces; the first one if several are equally long; "" if s has no words.',
    solution: `function longestWord(s) {
  let best = "";
  for (const w of s.split(" ")) if (w.length > best.length) best = w;
  return best;
}
`,
    tests: [
      tc(["the quick brown fox"], "quick"),
      tc([""], ""),
      tc(["a bb cc"], "bb"),
      tc(["hello"], "hello"),
      tc(["  spaced   out  "], "spaced"),
    ],
  },
  {
    id: "pascal_row",
    difficulty: 2,
    fnName: "pascalRow",
    signature: "function pascalRow(n)",
    statement:
      "Return row n (counting from 0) of Pascal's triangle: row 0 is [1], row 1 is [1, 1], row 2 is [1, 2, 1].",
    solution: `function pascalRow(n) {
  let row = [1];
  for (let i = 0; i < n; i++) row = [...row, 0].map((x, k) => x + (k > 0 ? row[k - 1] : 0));
  return row;
}
`,
    tests: [
      tc([0], [1]),
      tc([1], [1, 1]),
      tc([4], [1, 4, 6, 4, 1]),
      tc([6], [1, 6, 15, 20, 15, 6, 1]),
    ],
  },
  {
    id: "transpose",
    difficulty: 2,
    fnName: "transpose",
    signature: "function transpose(m)",
    statement:
      "Return the transpose of the rectangular matrix m, given as an array of rows: row i of the result is column i of m. transpose([]) is [].",
    solution: `function transpose(m) {
  if (m.length === 0) return [];
  return m[0].map((_, c) => m.map((row) => row[c]));
}
`,
    tests: [
      tc([[[1, 2, 3], [4, 5, 6]]], [[1, 4], [2, 5], [3, 6]]),
      tc([[]], []),
      tc([[[1]]], [[1]]),
      tc([[[1], [2]]], [[1, 2]]),
    ],
  },
  {
    id: "missing_number",
    difficulty: 2,
    fnName: "missingNumber",
    signature: "function missingNumber(nums)",
    statement:
      "nums holds n distinct integers taken from 0, 1, ..., n (in any order), so exactly one of those n + 1 numbers is missing. Return it.",
    solution: `function missingNumber(nums) {
  const n = nums.length;
  return (n * (n + 1)) / 2 - nums.reduce((a, b) => a + b, 0);
}
`,
    tests: [
      tc([[3, 0, 1]], 2),
      tc([[0]], 1),
      tc([[1]], 0),
      tc([[]], 0),
      tc([[9, 6, 4, 2, 3, 5, 7, 0, 1]], 8),
    ],
  },
  {
    id: "caesar_cipher",
    difficulty: 2,
    fnName: "caesarCipher",
    signature: "function caesarCipher(s, k)",
    statement:
      "Shift every letter of s forward by k places in the alphabet (0 <= k <= 25), wrapping from z to a and keeping upper or lower case; other characters stay as they are.",
    solution: `function caesarCipher(s, k) {
  return s.replace(/[a-z]/gi, (ch) => {
    const base = ch <= "Z" ? 65 : 97;
    return String.fromCharCode(((ch.charCodeAt(0) - base + k) % 26) + base);
  });
}
`,
    tests: [
      tc(["abc", 1], "bcd"),
      tc(["xyz", 3], "abc"),
      tc(["Hello, World!", 13], "Uryyb, Jbeyq!"),
      tc(["", 5], ""),
      tc(["A", 0], "A"),
    ],
  },
];

// Shipped Code problems, difficulty 1 (easy): one loop or one library call, written for this
// project. Every reference solution passes its tests (test/envs/code_test.ts runs them all).

import { type CodeProblem, tc } from "./problem.ts";

export const EASY: CodeProblem[] = [
  {
    id: "sum_array",
    difficulty: 1,
    fnName: "sumArray",
    signature: "function sumArray(nums)",
    statement: "Return the sum of the numbers in the array nums; an empty array sums to 0.",
    solution: `function sumArray(nums) {
  let total = 0;
  for (const x of nums) total += x;
  return total;
}
`,
    tests: [
      tc([[1, 2, 3]], 6),
      tc([[]], 0),
      tc([[-5, 5, 10]], 10),
      tc([[7]], 7),
      tc([[1.5, 2.5]], 4),
    ],
  },
  {
    id: "max_of",
    difficulty: 1,
    fnName: "maxOf",
    signature: "function maxOf(nums)",
    statement: "Return the largest number in the non-empty array nums.",
    solution: `function maxOf(nums) {
  let best = nums[0];
  for (const x of nums) if (x > best) best = x;
  return best;
}
`,
    tests: [
      tc([[3, 1, 2]], 3),
      tc([[-4, -2, -9]], -2),
      tc([[5]], 5),
      tc([[2, 2, 2]], 2),
      tc([[0, -1, 10, 9]], 10),
    ],
  },
  {
    id: "count_vowels",
    difficulty: 1,
    fnName: "countVowels",
    signature: "function countVowels(s)",
    statement:
      "Return how many vowels (a, e, i, o, u, in upper or lower case) the string s contains.",
    solution: `function countVowels(s) {
  let n = 0;
  for (const ch of s.toLowerCase()) if ("aeiou".includes(ch)) n++;
  return n;
}
`,
    tests: [
      tc(["hello"], 2),
      tc([""], 0),
      tc(["AEIOU xyz"], 5),
      tc(["rhythm"], 0),
      tc(["Programming"], 3),
    ],
  },
  {
    id: "reverse_string",
    difficulty: 1,
    fnName: "reverseString",
    signature: "function reverseString(s)",
    statement: "Return the string s reversed.",
    solution: `function reverseString(s) {
  return s.split("").reverse().join("");
}
`,
    tests: [
      tc(["abc"], "cba"),
      tc([""], ""),
      tc(["a"], "a"),
      tc(["racecar"], "racecar"),
      tc(["ab cd"], "dc ba"),
    ],
  },
  {
    id: "is_palindrome",
    difficulty: 1,
    fnName: "isPalindrome",
    signature: "function isPalindrome(s)",
    statement:
      "Return true if s reads the same forwards and backwards when case is ignored and every character that is not a letter (a-z) or digit is removed; the empty string is a palindrome.",
    solution: `function isPalindrome(s) {
  const t = s.toLowerCase().replace(/[^a-z0-9]/g, "");
  return t === t.split("").reverse().join("");
}
`,
    tests: [
      tc(["A man, a plan, a canal: Panama"], true),
      tc(["hello"], false),
      tc([""], true),
      tc(["No 'x' in Nixon"], true),
      tc(["ab"], false),
      tc(["12321"], true),
    ],
  },
  {
    id: "factorial",
    difficulty: 1,
    fnName: "factorial",
    signature: "function factorial(n)",
    statement:
      "Return n! (the product 1 * 2 * ... * n) for an integer n with 0 <= n <= 18; 0! is 1.",
    solution: `function factorial(n) {
  let p = 1;
  for (let i = 2; i <= n; i++) p *= i;
  return p;
}
`,
    tests: [tc([0], 1), tc([1], 1), tc([5], 120), tc([10], 3628800), tc([18], 6402373705728000)],
  },
  {
    id: "fizz_buzz",
    difficulty: 1,
    fnName: "fizzBuzz",
    signature: "function fizzBuzz(n)",
    statement:
      'Return an array of strings for the numbers 1 to n: "FizzBuzz" for multiples of 15, "Fizz" for other multiples of 3, "Buzz" for other multiples of 5, and the number itself as a string otherwise. fizzBuzz(0) is [].',
    solution: `function fizzBuzz(n) {
  const out = [];
  for (let i = 1; i <= n; i++) {
    out.push(i % 15 === 0 ? "FizzBuzz" : i % 3 === 0 ? "Fizz" : i % 5 === 0 ? "Buzz" : String(i));
  }
  return out;
}
`,
    tests: [
      tc([0], []),
      tc([1], ["1"]),
      tc([5], ["1", "2", "Fizz", "4", "Buzz"]),
      tc([15], [
        "1",
        "2",
        "Fizz",
        "4",
        "Buzz",
        "Fizz",
        "7",
        "8",
        "Fizz",
        "Buzz",
        "11",
        "Fizz",
        "13",
        "14",
        "FizzBuzz",
      ]),
    ],
  },
  {
    id: "celsius_to_fahrenheit",
    difficulty: 1,
    fnName: "celsiusToFahrenheit",
    signature: "function celsiusToFahrenheit(c)",
    statement: "Convert the temperature c from Celsius to Fahrenheit: F = c * 9 / 5 + 32.",
    solution: `function celsiusToFahrenheit(c) {
  return c * 9 / 5 + 32;
}
`,
    tests: [tc([0], 32), tc([100], 212), tc([-40], -40), tc([37], 98.6), tc([-17.5], 0.5)],
  },
  {
    id: "count_occurrences",
    difficulty: 1,
    fnName: "countOccurrences",
    signature: "function countOccurrences(arr, x)",
    statement: "Return how many elements of the array arr are strictly equal (===) to x.",
    solution: `function countOccurrences(arr, x) {
  return arr.filter((v) => v === x).length;
}
`,
    tests: [
      tc([[1, 2, 1, 1], 1], 3),
      tc([[], 5], 0),
      tc([["a", "b"], "c"], 0),
      tc([[1, "1", 1], "1"], 1),
      tc([[true, false, true], true], 2),
    ],
  },
  {
    id: "clamp",
    difficulty: 1,
    fnName: "clamp",
    signature: "function clamp(x, lo, hi)",
    statement:
      "Return x limited to the range [lo, hi]: lo if x < lo, hi if x > hi, else x (lo <= hi).",
    solution: `function clamp(x, lo, hi) {
  return Math.min(hi, Math.max(lo, x));
}
`,
    tests: [
      tc([5, 0, 10], 5),
      tc([-3, 0, 10], 0),
      tc([12, 0, 10], 10),
      tc([0, 0, 0], 0),
      tc([10, 0, 10], 10),
      tc([-7, -9, -8], -8),
    ],
  },
  {
    id: "capitalize_words",
    difficulty: 1,
    fnName: "capitalizeWords",
    signature: "function capitalizeWords(s)",
    statement:
      "Return s with the first character of every word upper-cased and everything else unchanged; words are separated by single spaces.",
    solution: `function capitalizeWords(s) {
  return s.split(" ").map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(" ");
}
`,
    tests: [
      tc(["hello world"], "Hello World"),
      tc([""], ""),
      tc(["a b c"], "A B C"),
      tc(["already Done"], "Already Done"),
      tc(["x1 yZ"], "X1 YZ"),
    ],
  },
  {
    id: "sum_digits",
    difficulty: 1,
    fnName: "sumDigits",
    signature: "function sumDigits(n)",
    statement:
      "Return the sum of the decimal digits of the integer n; a negative n counts its absolute value.",
    solution: `function sumDigits(n) {
  let s = 0;
  for (const d of String(Math.abs(n))) s += Number(d);
  return s;
}
`,
    tests: [tc([123], 6), tc([0], 0), tc([-45], 9), tc([9999], 36), tc([1000000], 1)],
  },
  {
    id: "count_words",
    difficulty: 1,
    fnName: "countWords",
    signature: "function countWords(s)",
    statement:
      "Return the number of words in s, where a word is a maximal run of non-whitespace characters (spaces, tabs and newlines separate words).",
    solution: `function countWords(s) {
  const t = s.trim();
  return t === "" ? 0 : t.split(/\\s+/).length;
}
`,
    tests: [
      tc(["hello world"], 2),
      tc([""], 0),
      tc(["   "], 0),
      tc([" one  two three "], 3),
      tc(["a\tb\nc"], 3),
    ],
  },
  {
    id: "range",
    difficulty: 1,
    fnName: "range",
    signature: "function range(start, end)",
    statement:
      "Return the array of integers from start (inclusive) up to end (exclusive) in ascending order; return [] when end <= start.",
    solution: `function range(start, end) {
  const out = [];
  for (let i = start; i < end; i++) out.push(i);
  return out;
}
`,
    tests: [
      tc([0, 5], [0, 1, 2, 3, 4]),
      tc([3, 3], []),
      tc([5, 2], []),
      tc([-2, 1], [-2, -1, 0]),
      tc([7, 8], [7]),
    ],
  },
  {
    id: "average",
    difficulty: 1,
    fnName: "average",
    signature: "function average(nums)",
    statement: "Return the arithmetic mean of the numbers in nums, or 0 for an empty array.",
    solution: `function average(nums) {
  if (nums.length === 0) return 0;
  return nums.reduce((a, b) => a + b, 0) / nums.length;
}
`,
    tests: [
      tc([[1, 2, 3, 4]], 2.5),
      tc([[]], 0),
      tc([[5]], 5),
      tc([[-1, 1]], 0),
      tc([[1, 2]], 1.5),
    ],
  },
  {
    id: "remove_duplicates",
    difficulty: 1,
    fnName: "removeDuplicates",
    signature: "function removeDuplicates(arr)",
    statement:
      "Return a new array with repeated values removed, keeping the first occurrence of each value in its original order (values compare with ===).",
    solution: `function removeDuplicates(arr) {
  const out = [];
  for (const x of arr) if (!out.includes(x)) out.push(x);
  return out;
}
`,
    tests: [
      tc([[1, 2, 1, 3, 2]], [1, 2, 3]),
      tc([[]], []),
      tc([["a", "a"]], ["a"]),
      tc([[1, "1"]], [1, "1"]),
      tc([[3, 3, 3, 1]], [3, 1]),
    ],
  },
  {
    id: "is_leap_year",
    difficulty: 1,
    fnName: "isLeapYear",
    signature: "function isLeapYear(year)",
    statement:
      "Return true if year is a leap year in the Gregorian calendar: divisible by 4, except years divisible by 100, which are leap years only when divisible by 400.",
    solution: `function isLeapYear(year) {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}
`,
    tests: [
      tc([2000], true),
      tc([1900], false),
      tc([2024], true),
      tc([2023], false),
      tc([2100], false),
      tc([1600], true),
    ],
  },
  {
    id: "min_index",
    difficulty: 1,
    fnName: "minIndex",
    signature: "function minIndex(nums)",
    statement:
      "Return the index of the smallest number in nums (the first such index if the minimum repeats), or -1 for an empty array.",
    solution: `function minIndex(nums) {
  let best = -1;
  for (let i = 0; i < nums.length; i++) if (best < 0 || nums[i] < nums[best]) best = i;
  return best;
}
`,
    tests: [
      tc([[3, 1, 2, 1]], 1),
      tc([[]], -1),
      tc([[5]], 0),
      tc([[-1, -5, -5]], 1),
      tc([[2, 3, 4]], 0),
    ],
  },
  {
    id: "repeat_string",
    difficulty: 1,
    fnName: "repeatString",
    signature: "function repeatString(s, n)",
    statement: "Return the string s repeated n times in a row (n is an integer >= 0).",
    solution: `function repeatString(s, n) {
  let out = "";
  for (let i = 0; i < n; i++) out += s;
  return out;
}
`,
    tests: [
      tc(["ab", 3], "ababab"),
      tc(["x", 0], ""),
      tc(["", 5], ""),
      tc(["hi", 1], "hi"),
      tc(["-", 4], "----"),
    ],
  },
  {
    id: "count_positives",
    difficulty: 1,
    fnName: "countPositives",
    signature: "function countPositives(nums)",
    statement: "Return how many numbers in nums are strictly greater than 0.",
    solution: `function countPositives(nums) {
  return nums.filter((x) => x > 0).length;
}
`,
    tests: [
      tc([[1, -2, 0, 3]], 2),
      tc([[]], 0),
      tc([[0, 0]], 0),
      tc([[-1]], 0),
      tc([[5, 5]], 2),
      tc([[0.5]], 1),
    ],
  },
  {
    id: "gcd",
    difficulty: 1,
    fnName: "gcd",
    signature: "function gcd(a, b)",
    statement:
      "Return the greatest common divisor of the non-negative integers a and b; gcd(x, 0) is x and gcd(0, 0) is 0.",
    solution: `function gcd(a, b) {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
`,
    tests: [
      tc([12, 18], 6),
      tc([7, 13], 1),
      tc([0, 5], 5),
      tc([0, 0], 0),
      tc([100, 10], 10),
      tc([9, 0], 9),
    ],
  },
];

// Shipped Code problems, difficulty 3 (hard): dynamic programming, search, parsing and interval
// problems, written for this project. Statements pin down ties, order and edge cases.

import { type CodeProblem, tc } from "./problem.ts";

export const HARD: CodeProblem[] = [
  {
    id: "longest_common_prefix",
    difficulty: 3,
    fnName: "longestCommonPrefix",
    signature: "function longestCommonPrefix(strs)",
    statement:
      'Return the longest string that every string in the array strs starts with; "" when strs is empty or there is no common prefix.',
    solution: `function longestCommonPrefix(strs) {
  if (strs.length === 0) return "";
  let p = strs[0];
  for (const s of strs) while (!s.startsWith(p)) p = p.slice(0, -1);
  return p;
}
`,
    tests: [
      tc([["flower", "flow", "flight"]], "fl"),
      tc([["dog", "racecar", "car"]], ""),
      tc([[]], ""),
      tc([["a"]], "a"),
      tc([["ab", "ab"]], "ab"),
      tc([["", "a"]], ""),
    ],
  },
  {
    id: "max_subarray_sum",
    difficulty: 3,
    fnName: "maxSubarraySum",
    signature: "function maxSubarraySum(nums)",
    statement:
      "Return the largest sum of a contiguous, non-empty run of elements of the non-empty array nums.",
    solution: `function maxSubarraySum(nums) {
  let best = nums[0], cur = 0;
  for (const x of nums) {
    cur = Math.max(x, cur + x);
    best = Math.max(best, cur);
  }
  return best;
}
`,
    tests: [
      tc([[-2, 1, -3, 4, -1, 2, 1, -5, 4]], 6),
      tc([[1]], 1),
      tc([[-3, -1, -2]], -1),
      tc([[5, 4, -1, 7, 8]], 23),
      tc([[2, -10, 3]], 3),
    ],
  },
  {
    id: "longest_increasing_subsequence",
    difficulty: 3,
    fnName: "lisLength",
    signature: "function lisLength(nums)",
    statement:
      "Return the length of the longest strictly increasing subsequence of nums (elements in order, not necessarily adjacent); 0 for an empty array.",
    solution: `function lisLength(nums) {
  const best = nums.map(() => 1);
  for (let i = 0; i < nums.length; i++) {
    for (let j = 0; j < i; j++) if (nums[j] < nums[i]) best[i] = Math.max(best[i], best[j] + 1);
  }
  return Math.max(0, ...best);
}
`,
    tests: [
      tc([[10, 9, 2, 5, 3, 7, 101, 18]], 4),
      tc([[]], 0),
      tc([[7, 7, 7]], 1),
      tc([[0, 1, 0, 3, 2, 3]], 4),
      tc([[5]], 1),
    ],
  },
  {
    id: "edit_distance",
    difficulty: 3,
    fnName: "editDistance",
    signature: "function editDistance(a, b)",
    statement:
      "Return the Levenshtein distance between the strings a and b: the fewest single-character insertions, deletions and substitutions that turn a into b.",
    solution: `function editDistance(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}
`,
    tests: [
      tc(["kitten", "sitting"], 3),
      tc(["", "abc"], 3),
      tc(["abc", "abc"], 0),
      tc(["flaw", "lawn"], 2),
      tc(["", ""], 0),
      tc(["intention", "execution"], 5),
    ],
  },
  {
    id: "coin_change",
    difficulty: 3,
    fnName: "coinChange",
    signature: "function coinChange(coins, amount)",
    statement:
      "coins holds distinct positive coin values, each available in unlimited number. Return the fewest coins that add up to exactly amount (an integer >= 0), 0 when amount is 0, or -1 when it cannot be made.",
    solution: `function coinChange(coins, amount) {
  const best = new Array(amount + 1).fill(Infinity);
  best[0] = 0;
  for (let a = 1; a <= amount; a++) {
    for (const c of coins) if (c <= a && best[a - c] + 1 < best[a]) best[a] = best[a - c] + 1;
  }
  return best[amount] === Infinity ? -1 : best[amount];
}
`,
    tests: [
      tc([[1, 2, 5], 11], 3),
      tc([[2], 3], -1),
      tc([[1], 0], 0),
      tc([[3, 7], 12], 4),
      tc([[1, 3, 4], 6], 2),
      tc([[186, 419, 83, 408], 6249], 20),
    ],
  },
  {
    id: "longest_unique_substring",
    difficulty: 3,
    fnName: "longestUniqueSubstring",
    signature: "function longestUniqueSubstring(s)",
    statement:
      "Return the length of the longest run of consecutive characters of s in which no character repeats.",
    solution: `function longestUniqueSubstring(s) {
  const last = new Map();
  let start = 0, best = 0;
  for (let i = 0; i < s.length; i++) {
    if (last.has(s[i]) && last.get(s[i]) >= start) start = last.get(s[i]) + 1;
    last.set(s[i], i);
    best = Math.max(best, i - start + 1);
  }
  return best;
}
`,
    tests: [
      tc(["abcabcbb"], 3),
      tc(["bbbbb"], 1),
      tc(["pwwkew"], 3),
      tc([""], 0),
      tc(["dvdf"], 3),
      tc(["abba"], 2),
    ],
  },
  {
    id: "count_islands",
    difficulty: 3,
    fnName: "countIslands",
    signature: "function countIslands(grid)",
    statement:
      'grid is an array of equal-length strings of "1" (land) and "0" (water). Return the number of islands: groups of land cells connected up, down, left or right (not diagonally).',
    solution: `function countIslands(grid) {
  const seen = grid.map((row) => row.split("").map(() => false));
  let n = 0;
  const fill = (r, c) => {
    if (r < 0 || c < 0 || r >= grid.length || c >= grid[r].length) return;
    if (grid[r][c] !== "1" || seen[r][c]) return;
    seen[r][c] = true;
    fill(r + 1, c); fill(r - 1, c); fill(r, c + 1); fill(r, c - 1);
  };
  for (let r = 0; r < grid.length; r++) {
    for (let c = 0; c < grid[r].length; c++) {
      if (grid[r][c] === "1" && !seen[r][c]) { n++; fill(r, c); }
    }
  }
  return n;
}
`,
    tests: [
      tc([["11000", "11000", "00100", "00011"]], 3),
      tc([[]], 0),
      tc([["000"]], 0),
      tc([["1"]], 1),
      tc([["101", "010", "101"]], 5),
      tc([["111", "101", "111"]], 1),
    ],
  },
  {
    id: "eval_rpn",
    difficulty: 3,
    fnName: "evalRPN",
    signature: "function evalRPN(tokens)",
    statement:
      'Evaluate an expression in Reverse Polish Notation. tokens is an array of strings: integers (possibly negative, like "-11") or the operators "+", "-", "*", "/". Division truncates toward zero. The expression is valid.',
    solution: `function evalRPN(tokens) {
  const st = [];
  for (const t of tokens) {
    if (["+", "-", "*", "/"].includes(t)) {
      const b = st.pop(), a = st.pop();
      st.push(t === "+" ? a + b : t === "-" ? a - b : t === "*" ? a * b : Math.trunc(a / b));
    } else st.push(Number(t));
  }
  return st[0];
}
`,
    tests: [
      tc([["2", "1", "+", "3", "*"]], 9),
      tc([["4", "13", "5", "/", "+"]], 6),
      tc([["10", "6", "9", "3", "+", "-11", "*", "/", "*", "17", "+", "5", "+"]], 22),
      tc([["3"]], 3),
      tc([["7", "-2", "/"]], -3),
    ],
  },
  {
    id: "group_anagrams",
    difficulty: 3,
    fnName: "groupAnagrams",
    signature: "function groupAnagrams(words)",
    statement:
      "Group the words that are anagrams of each other (same letters, same counts). Return an array of groups; each group lists its words in input order (repeats included), and groups are ordered by where their first word appears.",
    solution: `function groupAnagrams(words) {
  const groups = new Map();
  for (const w of words) {
    const key = w.split("").sort().join("");
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(w);
  }
  return [...groups.values()];
}
`,
    tests: [
      tc([["eat", "tea", "tan", "ate", "nat", "bat"]], [["eat", "tea", "ate"], ["tan", "nat"], [
        "bat",
      ]]),
      tc([[]], []),
      tc([["a"]], [["a"]]),
      tc([["ab", "ba", "ab"]], [["ab", "ba", "ab"]]),
      tc([["", "b", ""]], [["", ""], ["b"]]),
    ],
  },
  {
    id: "spiral_order",
    difficulty: 3,
    fnName: "spiralOrder",
    signature: "function spiralOrder(matrix)",
    statement:
      "Return the elements of the rectangular matrix (an array of rows) in clockwise spiral order, starting at the top-left corner and going right first. spiralOrder([]) is [].",
    solution: `function spiralOrder(matrix) {
  const out = [];
  if (matrix.length === 0) return out;
  let top = 0, bottom = matrix.length - 1, left = 0, right = matrix[0].length - 1;
  while (top <= bottom && left <= right) {
    for (let c = left; c <= right; c++) out.push(matrix[top][c]);
    for (let r = top + 1; r <= bottom; r++) out.push(matrix[r][right]);
    if (top < bottom) for (let c = right - 1; c >= left; c--) out.push(matrix[bottom][c]);
    if (left < right) for (let r = bottom - 1; r > top; r--) out.push(matrix[r][left]);
    top++; bottom--; left++; right--;
  }
  return out;
}
`,
    tests: [
      tc([[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [1, 2, 3, 6, 9, 8, 7, 4, 5]),
      tc([[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]], [1, 2, 3, 4, 8, 12, 11, 10, 9, 5, 6, 7]),
      tc([[]], []),
      tc([[[1]]], [1]),
      tc([[[1], [2], [3]]], [1, 2, 3]),
      tc([[[1, 2, 3]]], [1, 2, 3]),
    ],
  },
  {
    id: "merge_intervals",
    difficulty: 3,
    fnName: "mergeIntervals",
    signature: "function mergeIntervals(intervals)",
    statement:
      "intervals is an array of [start, end] pairs with start <= end, in any order. Merge every group of overlapping intervals (touching ones like [1, 2] and [2, 3] merge too) and return the result sorted by start.",
    solution: `function mergeIntervals(intervals) {
  const sorted = intervals.map((iv) => iv.slice()).sort((a, b) => a[0] - b[0]);
  const out = [];
  for (const iv of sorted) {
    const last = out[out.length - 1];
    if (last && iv[0] <= last[1]) last[1] = Math.max(last[1], iv[1]);
    else out.push(iv);
  }
  return out;
}
`,
    tests: [
      tc([[[1, 3], [2, 6], [8, 10], [15, 18]]], [[1, 6], [8, 10], [15, 18]]),
      tc([[[1, 4], [4, 5]]], [[1, 5]]),
      tc([[]], []),
      tc([[[5, 6], [1, 2]]], [[1, 2], [5, 6]]),
      tc([[[1, 10], [2, 3]]], [[1, 10]]),
    ],
  },
  {
    id: "is_valid_ipv4",
    difficulty: 3,
    fnName: "isValidIPv4",
    signature: "function isValidIPv4(s)",
    statement:
      'Return true if s is an IPv4 address: exactly four decimal numbers from 0 to 255 separated by dots, each made of digits only, with no leading zeros (except the number "0" itself).',
    solution: `function isValidIPv4(s) {
  const parts = s.split(".");
  return parts.length === 4 && parts.every((p) => /^(0|[1-9][0-9]{0,2})$/.test(p) && Number(p) <= 255);
}
`,
    tests: [
      tc(["192.168.0.1"], true),
      tc(["256.1.1.1"], false),
      tc(["01.2.3.4"], false),
      tc(["1.2.3"], false),
      tc(["0.0.0.0"], true),
      tc(["1.2.3.4.5"], false),
      tc(["a.b.c.d"], false),
      tc(["1..2.3"], false),
    ],
  },
  {
    id: "n_queens",
    difficulty: 3,
    fnName: "countNQueens",
    signature: "function countNQueens(n)",
    statement:
      "Return the number of ways to place n queens on an n by n chessboard so that no two attack each other (same row, column or diagonal), for 1 <= n <= 9.",
    solution: `function countNQueens(n) {
  const cols = new Set(), d1 = new Set(), d2 = new Set();
  const place = (r) => {
    if (r === n) return 1;
    let count = 0;
    for (let c = 0; c < n; c++) {
      if (cols.has(c) || d1.has(r - c) || d2.has(r + c)) continue;
      cols.add(c); d1.add(r - c); d2.add(r + c);
      count += place(r + 1);
      cols.delete(c); d1.delete(r - c); d2.delete(r + c);
    }
    return count;
  };
  return place(0);
}
`,
    tests: [tc([1], 1), tc([2], 0), tc([3], 0), tc([4], 2), tc([5], 10), tc([6], 4), tc([8], 92)],
  },
  {
    id: "knapsack",
    difficulty: 3,
    fnName: "knapsack",
    signature: "function knapsack(weights, values, capacity)",
    statement:
      "Item i has weight weights[i] and value values[i] (positive integers). Return the largest total value of a set of items, each used at most once, whose total weight is at most capacity (an integer >= 0).",
    solution: `function knapsack(weights, values, capacity) {
  const best = new Array(capacity + 1).fill(0);
  for (let i = 0; i < weights.length; i++) {
    for (let c = capacity; c >= weights[i]; c--) {
      best[c] = Math.max(best[c], best[c - weights[i]] + values[i]);
    }
  }
  return best[capacity];
}
`,
    tests: [
      tc([[1, 3, 4, 5], [1, 4, 5, 7], 7], 9),
      tc([[], [], 10], 0),
      tc([[5], [10], 4], 0),
      tc([[2, 3], [3, 4], 5], 7),
      tc([[4, 2, 3], [10, 4, 7], 0], 0),
      tc([[2, 2, 2], [5, 5, 5], 5], 10),
    ],
  },
  {
    id: "word_break",
    difficulty: 3,
    fnName: "wordBreak",
    signature: "function wordBreak(s, words)",
    statement:
      'Return true if the string s can be cut into a sequence of words from the array words (each word may be used any number of times); the empty string counts as cut into zero words, so wordBreak("", words) is true.',
    solution: `function wordBreak(s, words) {
  const ok = [true];
  for (let i = 1; i <= s.length; i++) {
    ok[i] = words.some((w) => w.length > 0 && w.length <= i && ok[i - w.length] && s.slice(i - w.length, i) === w);
  }
  return ok[s.length];
}
`,
    tests: [
      tc(["leetcode", ["leet", "code"]], true),
      tc(["applepenapple", ["apple", "pen"]], true),
      tc(["catsandog", ["cats", "dog", "sand", "and", "cat"]], false),
      tc(["", ["a"]], true),
      tc(["aaaaaaa", ["aaa", "aaaa"]], true),
      tc(["ab", []], false),
    ],
  },
  {
    id: "longest_palindrome_substring",
    difficulty: 3,
    fnName: "longestPalindrome",
    signature: "function longestPalindrome(s)",
    statement:
      'Return the longest run of consecutive characters of s that reads the same forwards and backwards; if several are equally long, the one that starts first; "" for the empty string.',
    solution: `function longestPalindrome(s) {
  let best = "";
  for (let c = 0; c < 2 * s.length - 1; c++) {
    let lo = Math.floor(c / 2), hi = lo + (c % 2);
    while (lo >= 0 && hi < s.length && s[lo] === s[hi]) { lo--; hi++; }
    const cand = s.slice(lo + 1, hi);
    if (cand.length > best.length) best = cand; // centres run left to right: first wins ties
  }
  return best;
}
`,
    tests: [
      tc(["babad"], "bab"),
      tc(["cbbd"], "bb"),
      tc(["a"], "a"),
      tc([""], ""),
      tc(["forgeeksskeegfor"], "geeksskeeg"),
      tc(["abcd"], "a"),
    ],
  },
  {
    id: "balanced_split",
    difficulty: 3,
    fnName: "canPartition",
    signature: "function canPartition(nums)",
    statement:
      "Return true if the array nums of positive integers can be split into two groups with equal sums (every element goes to exactly one group); the empty array can (0 = 0).",
    solution: `function canPartition(nums) {
  const total = nums.reduce((a, b) => a + b, 0);
  if (total % 2 !== 0) return false;
  const reach = new Set([0]);
  for (const x of nums) for (const s of [...reach]) reach.add(s + x);
  return reach.has(total / 2);
}
`,
    tests: [
      tc([[1, 5, 11, 5]], true),
      tc([[1, 2, 3, 5]], false),
      tc([[]], true),
      tc([[2]], false),
      tc([[3, 3]], true),
      tc([[1, 1, 1, 1, 1, 1, 6]], true),
    ],
  },
];

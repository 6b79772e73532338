// The shipped Code problem set: 59 small JavaScript problems written for this project, by
// difficulty (easy 21, medium 21, hard 17). Users bring their own through tasks.ts's loader.

import type { CodeProblem } from "./problem.ts";
import { EASY } from "./problems_easy.ts";
import { HARD } from "./problems_hard.ts";
import { MEDIUM } from "./problems_medium.ts";

export type { CodeProblem };

export const PROBLEMS: readonly CodeProblem[] = [...EASY, ...MEDIUM, ...HARD];

// Builds both prompt styles from one description, so an env states what an agent should see once
// and the compact (tiny byte-level model) and chat (instruct model) forms cannot drift apart.

import type { Prompt, PromptStyle } from "./types.ts";

export interface PromptParts {
  /** Chat only: who the agent is, the rules, the exact answer format. */
  system: string;
  /** Chat only: the situation in full sentences. */
  user: string;
  /** Compact only: terse situation + answer cue; short lines, no prose. */
  compact: string;
}

export function buildPrompt(style: PromptStyle, parts: PromptParts): Prompt {
  if (style === "compact") return { style, text: parts.compact };
  return {
    style,
    messages: [
      { role: "system", content: parts.system },
      { role: "user", content: parts.user },
    ],
  };
}

/** Flattens a prompt to one string (logs, byte-level models given a chat prompt). */
export function promptText(p: Prompt): string {
  if (p.style === "compact") return p.text;
  return p.messages.map((m) => `<${m.role}>\n${m.content}`).join("\n");
}

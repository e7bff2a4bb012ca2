// "Rewind to here": what bridle's _bridle/rewind_preview says a rewind
// would do, put into words for the confirmation. Free of VS Code, so it is
// tested on its own.

import { relativePath } from "./names";

/** The answer of `_bridle/rewind_preview` (docs/protocol.md). */
export interface RewindPlan {
  prompt: number;
  /** Files the agent changed since the prompt, to put back; `to` empty: the agent created it, it is removed. */
  restore: { path: string; from?: string; to?: string }[];
  /** Files the user changed after the agent: bridle asks before putting them back. */
  yours: string[];
  /** Files that cannot be put back, each with why. */
  kept: string[];
}

/** The confirmation's message and detail (a modal dialog shows both). */
export function rewindConfirmation(plan: RewindPlan, promptText: string, root: string): { message: string; detail: string } {
  const rel = (p: string) => relativePath(p, root);
  const text = promptText.length > 60 ? promptText.slice(0, 57) + "..." : promptText;
  const message = `Rewind to before prompt ${plan.prompt}${text ? `: "${text}"` : ""}?`;
  const parts = [
    "bridle no longer sees this prompt and what came after it, and puts back the files its agent changed since. The messages stay in the chat, marked rewound.",
  ];
  const restore = (plan.restore ?? []).filter((r) => r.to);
  const remove = (plan.restore ?? []).filter((r) => !r.to);
  const list = (title: string, paths: string[]) => `${title}\n${paths.map((p) => `  • ${p}`).join("\n")}`;
  if (restore.length) parts.push(list("Put back as they were:", restore.map((r) => rel(r.path))));
  if (remove.length) parts.push(list("Remove (the agent created them):", remove.map((r) => rel(r.path))));
  if (plan.yours?.length) parts.push(list("Changed by you since the agent (bridle will ask before putting them back):", plan.yours.map(rel)));
  if (plan.kept?.length) parts.push(list("Cannot be put back:", plan.kept));
  if (!restore.length && !remove.length && !plan.yours?.length) parts.push("No files to put back.");
  return { message, detail: parts.join("\n\n") };
}

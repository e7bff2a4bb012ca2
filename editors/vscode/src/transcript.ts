// The chat transcript as data: ACP session/update notifications are folded
// into a list of items that the webview renders. Kept free of VS Code so the
// folding can be tested on its own.

import type * as acp from "@agentclientprotocol/sdk";
import { dropImagePlaceholder, type PromptImage } from "./images";

export interface DiffView {
  path: string;
  oldText: string | null;
  newText: string;
}

/** A place a tool call touches: an absolute path (ACP's rule) and maybe a line. */
export interface Location {
  path: string;
  line?: number;
}

export type PlanEntry = Pick<acp.PlanEntry, "content" | "priority" | "status">;

export type Item = (
  | {
      kind: "user";
      id: string;
      text: string;
      messageId?: string;
      images?: PromptImage[];
      /** The prompt's number in the session (bridle's _bridle/prompts), which "Rewind to here" goes back to before. */
      prompt?: number;
    }
  | { kind: "agent"; id: string; text: string; messageId?: string }
  | { kind: "thought"; id: string; text: string; messageId?: string }
  | {
      kind: "tool";
      id: string;
      toolCallId: string;
      title: string;
      toolKind: string;
      status: string;
      /** The command line of a command run. */
      command?: string;
      /** The pattern of a search (grep, glob), and the files it is limited to. */
      pattern?: string;
      glob?: string;
      /** The path argument as the model wrote it (often relative). */
      path?: string;
      /** The raw arguments, pretty-printed, for the card's expander. */
      args?: string;
      /** A call that sets the plan: the plan's checklist shows what it says. */
      setsPlan?: boolean;
      output?: string;
      diffs: DiffView[];
      locations: Location[];
    }
  | {
      kind: "permission";
      id: string;
      toolCallId: string;
      title: string;
      /** The command line asked about, for a command run. */
      command?: string;
      options: acp.PermissionOption[];
      /** optionId chosen, "cancelled", or undefined while waiting. */
      answer?: string;
      diffs: DiffView[];
    }
  | { kind: "notice"; id: string; text: string; level: "info" | "warning" | "error" }
  /** The agent's plan; each plan update replaces the entries of the one item. */
  | { kind: "plan"; id: string; entries: PlanEntry[] }
) & {
  /** A rewind went back over it: the agent no longer sees it and its file changes were put back. */
  rewound?: boolean;
};

/** One of the session's prompts, as bridle's `_bridle/prompts` lists them. */
export interface PromptInfo {
  n: number;
  /** The prompt's first line, cut to 80 characters as bridle's titles are. */
  text: string;
  rewound?: boolean;
  files: string[];
}

/** A prompt's text as bridle lists it: its first line, at most 80 characters (77 and "..."). */
export function promptTitle(text: string): string {
  let t = text.split("\n")[0];
  const r = [...t];
  if (r.length > 80) t = r.slice(0, 77).join("") + "...";
  return t;
}

/** The agent message that reports a rewind; what follows it is not rewound. */
export const rewoundNotice = /^Rewound to before prompt \d+/;

/**
 * Numbers the transcript's user messages with bridle's prompts and marks
 * what rewinds went back over; returns the items it changed.
 *
 * The transcript's user messages and bridle's prompts go in the same
 * order, but not one for one: /rewind, /fork, /constraint and /decision are no
 * prompts, and a prompt bridle refused is not in its log. So each user
 * message takes the next prompt with its text, if any. A rewound prompt,
 * and everything after it up to the next prompt that is not rewound (or
 * to the message that reports the rewind), is marked rewound.
 */
export function numberPrompts(items: Item[], prompts: PromptInfo[]): Item[] {
  const changed: Item[] = [];
  let j = 0;
  let dim = false;
  for (const it of items) {
    const before = `${it.kind === "user" ? it.prompt : ""}/${it.rewound}`;
    if (it.kind === "user") {
      const title = promptTitle(it.text.trim());
      let k = j;
      while (k < prompts.length && prompts[k].text !== title) k++;
      if (k < prompts.length) {
        it.prompt = prompts[k].n;
        dim = !!prompts[k].rewound;
        j = k + 1;
      } else {
        delete it.prompt;
        dim = false;
      }
    } else if (it.kind === "agent" && rewoundNotice.test(it.text)) dim = false;
    // The extension's own notices (a resume, an error) belong to no turn.
    if (dim && it.kind !== "notice") it.rewound = true;
    else delete it.rewound;
    if (`${it.kind === "user" ? it.prompt : ""}/${it.rewound}` !== before) changed.push(it);
  }
  return changed;
}

const previewLines = 12;
const previewChars = 2000;

/** The tail of a long output, with a note of what was left out. */
export function preview(text: string): string {
  let lines = text.replace(/\s+$/, "").split("\n");
  let cut = 0;
  if (lines.length > previewLines) {
    cut = lines.length - previewLines;
    lines = lines.slice(-previewLines);
  }
  let out = lines.join("\n");
  if (out.length > previewChars) out = "…" + out.slice(-previewChars);
  return cut ? `… (${cut} earlier lines)\n${out}` : out;
}

function contentText(c: acp.ContentBlock): string {
  switch (c.type) {
    case "text":
      return c.text;
    case "resource_link":
      return `[${c.name}](${c.uri})`;
    case "resource":
      return "text" in c.resource ? c.resource.text : `(${c.resource.uri})`;
    default:
      return `(${c.type})`;
  }
}

/** Command output arrives as a markdown code block; the card shows it verbatim. */
function unfence(s: string): string {
  const m = /^```[\w-]*\n([\s\S]*?)\n?```\s*$/.exec(s);
  return m ? m[1] : s;
}

function toolContent(content: acp.ToolCallContent[] | null | undefined): { output?: string; diffs: DiffView[] } {
  const texts: string[] = [];
  const diffs: DiffView[] = [];
  for (const c of content ?? []) {
    if (c.type === "content") texts.push(contentText(c.content));
    else if (c.type === "diff") diffs.push({ path: c.path, oldText: c.oldText ?? null, newText: c.newText });
    else if (c.type === "terminal") texts.push(`(terminal ${c.terminalId})`);
  }
  return { output: texts.length ? preview(texts.map(unfence).join("\n")) : undefined, diffs };
}

const argsChars = 4000;

/**
 * What a card shows of a call's raw input: the one field that matters (the
 * command line, the search pattern, the path) and the whole input, pretty,
 * for when the card is expanded.
 */
export function inputSummary(raw: unknown): { command?: string; pattern?: string; glob?: string; path?: string; args?: string; setsPlan?: boolean } {
  if (raw === undefined || raw === null) return {};
  const out: { command?: string; pattern?: string; glob?: string; path?: string; args?: string; setsPlan?: boolean } = {};
  if (typeof raw === "object" && !Array.isArray(raw)) {
    const o = raw as Record<string, unknown>;
    if (typeof o.command === "string") out.command = o.command;
    else if (Array.isArray(o.command) && o.command.every((x) => typeof x === "string")) out.command = o.command.join(" ");
    if (typeof o.pattern === "string") out.pattern = o.pattern;
    if (typeof o.glob === "string" && o.glob) out.glob = o.glob;
    // bridle's plan tool: {"entries": [{"content", "status"}, ...]}.
    if (Array.isArray(o.entries) && o.entries.every((e) => typeof e === "object" && e !== null && typeof (e as { content?: unknown }).content === "string")) {
      out.setsPlan = true;
    }
    for (const k of ["path", "file_path", "file"]) {
      if (typeof o[k] === "string" && o[k]) {
        out.path = o[k] as string;
        break;
      }
    }
  }
  const s = typeof raw === "string" ? raw : JSON.stringify(raw, null, 2);
  if (s && s !== "{}") out.args = s.length > argsChars ? s.slice(0, argsChars) + "\n…" : s;
  return out;
}

function locations(ls: acp.ToolCallLocation[] | null | undefined): Location[] {
  return (ls ?? []).map((l) => (l.line != null ? { path: l.path, line: l.line } : { path: l.path }));
}

export class Transcript {
  items: Item[] = [];
  private seq = 0;

  private nextId(): string {
    return `i${++this.seq}`;
  }

  clear(): void {
    this.items = [];
  }

  private last(): Item | undefined {
    return this.items[this.items.length - 1];
  }

  addUser(text: string, images: PromptImage[] = []): Item {
    const it: Item = { kind: "user", id: this.nextId(), text };
    if (images.length) it.images = images.map((i) => ({ mimeType: i.mimeType, data: i.data, ...(i.name ? { name: i.name } : {}) }));
    this.items.push(it);
    return it;
  }

  remove(id: string): void {
    this.items = this.items.filter((i) => i.id !== id);
  }

  addNotice(text: string, level: "info" | "warning" | "error" = "info"): Item {
    const it: Item = { kind: "notice", id: this.nextId(), text, level };
    this.items.push(it);
    return it;
  }

  addPermission(req: acp.RequestPermissionRequest): Item & { kind: "permission" } {
    const tc = req.toolCall;
    const existing = this.findTool(tc.toolCallId);
    const it: Item & { kind: "permission" } = {
      kind: "permission",
      id: this.nextId(),
      toolCallId: tc.toolCallId,
      title: tc.title ?? (existing && existing.kind === "tool" ? existing.title : tc.toolCallId),
      // What is approved must be in view: a command's line, not only its description.
      command: (tc.rawInput !== undefined ? inputSummary(tc.rawInput).command : undefined) ?? (existing && existing.kind === "tool" ? existing.command : undefined),
      options: req.options,
      diffs: tc.content ? toolContent(tc.content).diffs : existing && existing.kind === "tool" ? existing.diffs : [],
    };
    this.items.push(it);
    return it;
  }

  answerPermission(id: string, answer: string): Item | undefined {
    const it = this.items.find((i) => i.id === id);
    if (it && it.kind === "permission") {
      it.answer = answer;
      return it;
    }
    return undefined;
  }

  findTool(toolCallId: string): Item | undefined {
    return this.items.find((i) => i.kind === "tool" && i.toolCallId === toolCallId);
  }

  /** Folds one update in and returns the items it changed (none for updates the transcript does not show). */
  apply(u: acp.SessionUpdate): Item[] {
    switch (u.sessionUpdate) {
      case "user_message_chunk":
      case "agent_message_chunk":
      case "agent_thought_chunk": {
        const kind = u.sessionUpdate === "user_message_chunk" ? "user" : u.sessionUpdate === "agent_message_chunk" ? "agent" : "thought";
        const last = this.last();
        const messageId = u.messageId ?? undefined;
        if (kind === "user" && u.content.type === "image") {
          // bridle replays a prompt's images right after its text: they
          // belong to that prompt, whose text named each one.
          const img = { mimeType: u.content.mimeType, data: u.content.data };
          if (last && last.kind === "user" && (messageId === undefined || last.messageId === undefined || last.messageId === messageId)) {
            last.text = dropImagePlaceholder(last.text, img.mimeType);
            last.images = [...(last.images ?? []), img];
            return [last];
          }
          const it: Item = { kind: "user", id: this.nextId(), text: "", messageId, images: [img] };
          this.items.push(it);
          return [it];
        }
        const text = contentText(u.content);
        // Agent chunks continue the message before them; a user chunk is a
        // new prompt (bridle replays each prompt whole) unless it carries the
        // same messageId as the one before.
        // The report of a rewind is a message of its own, though a replay
        // sends it right after the rewound turn's answer, with no messageId.
        const continues =
          !(kind === "agent" && rewoundNotice.test(text)) &&
          last !== undefined &&
          last.kind === kind &&
          (kind === "user" ? messageId !== undefined && last.messageId === messageId : (last as { messageId?: string }).messageId === messageId);
        if (continues) {
          last.text += text;
          return [last];
        }
        const it = { kind, id: this.nextId(), text, messageId } as Item;
        this.items.push(it);
        return [it];
      }
      case "tool_call": {
        const { output, diffs } = toolContent(u.content);
        const existing = this.findTool(u.toolCallId);
        const it: Item = {
          kind: "tool",
          id: existing?.id ?? this.nextId(),
          toolCallId: u.toolCallId,
          title: u.title,
          toolKind: u.kind ?? "other",
          status: u.status ?? "pending",
          ...inputSummary(u.rawInput),
          output,
          diffs,
          locations: locations(u.locations),
        };
        if (existing) this.items[this.items.indexOf(existing)] = it;
        else this.items.push(it);
        return [it];
      }
      case "tool_call_update": {
        let it = this.findTool(u.toolCallId);
        if (!it || it.kind !== "tool") {
          it = {
            kind: "tool",
            id: this.nextId(),
            toolCallId: u.toolCallId,
            title: u.title ?? u.toolCallId,
            toolKind: u.kind ?? "other",
            status: u.status ?? "pending",
            diffs: [],
            locations: [],
          };
          this.items.push(it);
        }
        if (u.title != null) it.title = u.title;
        if (u.kind != null) it.toolKind = u.kind;
        if (u.status != null) it.status = u.status;
        if (u.rawInput !== undefined) Object.assign(it, inputSummary(u.rawInput));
        if (u.content != null) {
          const { output, diffs } = toolContent(u.content);
          it.output = output;
          if (diffs.length) it.diffs = diffs;
        }
        if (u.locations != null) it.locations = locations(u.locations);
        return [it];
      }
      case "plan": {
        const entries = u.entries.map((e) => ({ content: e.content, priority: e.priority, status: e.status }));
        const existing = this.items.find((i) => i.kind === "plan");
        if (existing && existing.kind === "plan") {
          existing.entries = entries;
          return [existing];
        }
        const it: Item = { kind: "plan", id: this.nextId(), entries };
        this.items.push(it);
        return [it];
      }
      default:
        return [];
    }
  }
}

// The chat view's script. It renders what the extension host sends and sends
// back what the user does; all session state lives in the host.

import MarkdownIt from "markdown-it";
import type { ToWebview, FromWebview } from "../protocol";
import type { Item, Location } from "../transcript";
import { shortModelName, relativePath } from "../names";
import { checkImage, imageTypes, type PromptImage } from "../images";

declare function acquireVsCodeApi(): { postMessage(m: FromWebview): void };
const vscode = acquireVsCodeApi();
const md = new MarkdownIt({ html: false, linkify: true, breaks: false });

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const log = $<HTMLElement>("log");
const input = $<HTMLTextAreaElement>("input");
const send = $<HTMLButtonElement>("send");
const stop = $<HTMLButtonElement>("stop");
const mode = $<HTMLSelectElement>("mode");
const config = $<HTMLElement>("config");
const usage = $<HTMLElement>("usage");
const stateText = $<HTMLElement>("state");
const hint = $<HTMLElement>("hint");
const title = $<HTMLElement>("title");
const attachments = $<HTMLElement>("attachments");
const attachError = $<HTMLElement>("attach-error");

let commands: { name: string; description: string; hint?: string }[] = [];
let running = false;
/** The workspace folder; paths inside it are shown relative to it. */
let root = "";
/** Whether bridle takes images (its initialize); undefined until it is connected. */
let imagesOk: boolean | undefined;
/** Images attached to the prompt being written. */
let attached: PromptImage[] = [];

function el(tag: string, cls?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A link that opens a file (at a line) or reveals a folder, in the workbench. */
function fileLink(path: string, line?: number): HTMLElement {
  const a = el("a", "file-link", relativePath(path, root) + (line && line > 1 ? `:${line}` : "")) as HTMLAnchorElement;
  a.href = "#";
  a.title = line ? `${path}:${line}` : path;
  a.dataset.path = path;
  a.addEventListener("click", (e) => {
    e.preventDefault();
    vscode.postMessage({ type: "openFile", path, line });
  });
  return a;
}

function diffButton(it: Item & { diffs: { path: string }[] }, label: string, i: number): HTMLElement {
  const d = it.diffs[i];
  const b = el("button", "link", `${label}: ${relativePath(d.path, root)}`);
  b.title = d.path;
  b.addEventListener("click", () => vscode.postMessage({ type: "openDiff", itemId: it.id, index: i }));
  return b;
}

/** The one thing that matters about a call, under its title: the command line, the pattern, the path. */
function toolSubject(it: Item & { kind: "tool" }): HTMLElement[] {
  const out: HTMLElement[] = [];
  if (it.command) out.push(el("pre", "command", `$ ${it.command}`));
  if ((it.pattern && !it.title.includes(it.pattern)) || it.glob) {
    const p = el("div", "pattern");
    if (it.pattern && !it.title.includes(it.pattern)) p.append(el("code", undefined, it.pattern), " ");
    if (it.glob) p.append(el("span", "muted", "in files "), el("code", undefined, it.glob));
    out.push(p);
  }
  // The workspace folder itself (a command's or a search's default) says nothing.
  const locs: Location[] = it.locations.filter((l) => relativePath(l.path, root) !== ".");
  if (!locs.length && it.path && !it.locations.length) locs.push({ path: it.path });
  if (locs.length) {
    const row = el("div", "locations");
    if (it.command) row.append(el("span", "muted", "in "));
    locs.forEach((l, i) => {
      if (i) row.append(", ");
      row.append(fileLink(l.path, l.line));
    });
    out.push(row);
  }
  return out;
}

function thumbnail(img: PromptImage, label: string): HTMLImageElement {
  const t = document.createElement("img");
  t.className = "thumb";
  t.src = `data:${img.mimeType};base64,${img.data}`;
  t.alt = img.name ? `${label}: ${img.name}` : label;
  t.title = img.name ?? label;
  return t;
}

const statusLabel: Record<string, string> = {
  pending: "pending",
  in_progress: "running",
  completed: "done",
  failed: "failed",
};

function render(it: Item): HTMLElement {
  const node = el("div", `item ${it.kind}`);
  node.dataset.id = it.id;
  if (it.rewound) node.classList.add("rewound");
  switch (it.kind) {
    case "user": {
      const who = el("div", "who user-head");
      who.append(el("span", undefined, "You"));
      if (it.prompt !== undefined) {
        node.dataset.prompt = String(it.prompt);
        if (!it.rewound) {
          const b = el("button", "link rewind", "Rewind to here") as HTMLButtonElement;
          b.title = `Go back to before prompt ${it.prompt}: bridle puts back the files its agent changed since, and forgets this prompt and what came after. You confirm first.`;
          b.addEventListener("click", () => vscode.postMessage({ type: "rewind", itemId: it.id }));
          who.append(b);
        }
      }
      node.append(who);
      if (it.rewound) node.append(el("div", "rewound-note", "Rewound: bridle no longer sees this prompt or its answer, and put back the files it changed."));
      if (it.text || !it.images?.length) node.append(el("div", "text", it.text));
      if (it.images?.length) {
        const row = el("div", "images");
        it.images.forEach((img, i) => row.append(thumbnail(img, `Image ${i + 1} (${imageTypes[img.mimeType] ?? img.mimeType})`)));
        node.append(row);
      }
      break;
    }
    case "agent": {
      const body = el("div", "markdown");
      body.innerHTML = md.render(it.text);
      node.append(body);
      break;
    }
    case "thought": {
      const d = el("details", "thought-box") as HTMLDetailsElement;
      d.append(el("summary", undefined, "Thinking"), el("div", "text", it.text));
      node.append(d);
      break;
    }
    case "tool": {
      node.classList.add(`status-${it.status}`);
      const head = el("div", "tool-head");
      // A command with no description has its command line as its title: shown once, below.
      const t = it.command && it.title === it.command ? "Run a command" : it.title;
      const titleEl = el("span", "tool-title", t);
      titleEl.title = it.title;
      head.append(el("span", "tool-kind", it.toolKind), titleEl, el("span", `badge ${it.status}`, statusLabel[it.status] ?? it.status));
      node.append(head, ...toolSubject(it));
      it.diffs.forEach((_, i) => node.append(diffButton(it, "Open diff", i)));
      // A plan call's output repeats the plan, which its checklist shows (an error it does not).
      if (it.output && !(it.setsPlan && it.status !== "failed")) node.append(el("pre", "output", it.output));
      if (it.args) {
        const d = el("details", "args") as HTMLDetailsElement;
        d.append(el("summary", undefined, "Arguments"), el("pre", "input", it.args));
        node.append(d);
      }
      break;
    }
    case "permission": {
      const t = it.command && it.title === it.command ? "Run a command" : it.title;
      node.append(el("div", "who", it.answer === undefined ? "Approval needed" : "Approval"), el("div", "perm-title", t));
      if (it.command) node.append(el("pre", "command", `$ ${it.command}`));
      it.diffs.forEach((_, i) => node.append(diffButton(it, "Show diff", i)));
      if (it.answer !== undefined) {
        // Answered: the choice is what is left to read, not the four buttons.
        node.classList.add("answered");
        const chosen = it.options.find((o) => o.optionId === it.answer);
        const a = el("div", "perm-answer", chosen ? `Answered: ${chosen.name}` : "Cancelled");
        if (chosen) a.dataset.kind = chosen.kind;
        node.append(a);
        break;
      }
      const row = el("div", "perm-options");
      for (const o of it.options) {
        const b = el("button", o.kind.startsWith("allow") ? "allow" : "secondary reject", o.name) as HTMLButtonElement;
        b.dataset.kind = o.kind;
        b.addEventListener("click", () => vscode.postMessage({ type: "answer", itemId: it.id, optionId: o.optionId }));
        row.append(b);
      }
      node.append(row);
      break;
    }
    case "plan": {
      const done = it.entries.filter((e) => e.status === "completed").length;
      const head = el("div", "plan-head");
      head.append(el("span", "who", "Plan"), el("span", "plan-count", `${done}/${it.entries.length}`));
      const list = el("ul", "checklist");
      list.setAttribute("aria-label", "Plan");
      for (const e of it.entries) {
        const li = el("li", `entry ${e.status}`);
        li.dataset.status = e.status;
        li.dataset.priority = e.priority;
        const box = el("span", "check", e.status === "completed" ? "✓" : "");
        box.setAttribute("role", "checkbox");
        box.setAttribute("aria-checked", String(e.status === "completed"));
        box.setAttribute("aria-disabled", "true");
        if (e.status === "in_progress") li.setAttribute("aria-current", "step");
        li.append(box, el("span", "entry-text", e.content));
        list.append(li);
      }
      node.append(head, list);
      break;
    }
    case "notice":
      node.classList.add(it.level);
      node.append(el("div", "text", it.text));
      break;
  }
  return node;
}

// Streamed answers post an update per chunk; render at most once a frame.
const queued = new Map<string, Item>();
let frame = 0;
function schedule(it: Item): void {
  queued.set(it.id, it);
  if (!frame) frame = requestAnimationFrame(flush);
}
function flush(): void {
  frame = 0;
  const items = [...queued.values()];
  queued.clear();
  for (const it of items) upsert(it);
}

function upsert(it: Item): void {
  const stick = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  const fresh = render(it);
  const old = log.querySelector(`[data-id="${it.id}"]`);
  if (old) {
    // Keep what the user expanded (a card's arguments, a thought) across updates.
    const was = Array.from(old.querySelectorAll("details"), (d) => d.open);
    fresh.querySelectorAll("details").forEach((d, i) => (d.open = was[i] ?? false));
    old.replaceWith(fresh);
  }
  else log.append(fresh);
  if (stick) log.scrollTop = log.scrollHeight;
}

function setRunning(r: boolean): void {
  running = r;
  stop.disabled = !r;
  send.disabled = r;
  stateText.textContent = r ? "bridle is working…" : "";
  document.body.classList.toggle("running", r);
}

function setModes(m: ToWebview & { type: "state" }): void {
  mode.replaceChildren();
  const modes = m.modes?.availableModes ?? [];
  mode.hidden = modes.length === 0;
  for (const x of modes) {
    const o = document.createElement("option");
    o.value = x.id;
    o.textContent = x.name;
    o.title = x.description ?? "";
    mode.append(o);
  }
  if (m.modes) mode.value = m.modes.currentModeId;
  config.replaceChildren();
  for (const c of m.configOptions) {
    if (c.type !== "select" || c.category === "mode") continue;
    const s = document.createElement("select");
    s.setAttribute("aria-label", c.name);
    s.dataset.config = c.id;
    const opts = c.options.flatMap((o) => ("options" in o ? o.options : [o]));
    const label = c.category === "model" ? shortModelName : (n: string) => n;
    for (const o of opts) {
      const e = document.createElement("option");
      e.value = o.value;
      e.textContent = label(o.name);
      e.title = o.description ? `${o.name}: ${o.description}` : o.name;
      s.append(e);
    }
    s.value = c.currentValue;
    const current = opts.find((o) => o.value === c.currentValue);
    s.title = `${c.name}: ${current?.name ?? c.currentValue}`;
    s.addEventListener("change", () => vscode.postMessage({ type: "setConfig", configId: c.id, value: s.value }));
    config.append(s);
  }
}

window.addEventListener("message", (ev: MessageEvent<ToWebview>) => {
  const m = ev.data;
  switch (m.type) {
    case "state":
      root = m.root;
      if (m.items) {
        queued.clear();
        log.replaceChildren();
        for (const it of m.items) upsert(it);
      }
      setRunning(m.running);
      setModes(m);
      commands = m.commands.map((c) => ({ name: c.name, description: c.description, hint: c.input && "hint" in c.input ? c.input.hint : undefined }));
      usage.textContent = m.usage ?? "";
      setImagesOk(m.images);
      document.body.dataset.session = m.sessionId ?? "";
      title.textContent = m.title || (m.sessionId ? "New chat" : "");
      title.title = m.title ? `${m.title}\n${m.sessionId ?? ""}` : (m.sessionId ?? "");
      title.classList.toggle("untitled", !m.title);
      updateHint();
      break;
    case "item":
      schedule(m.item);
      break;
    case "usage":
      usage.textContent = m.text;
      break;
    case "draft":
      // A prompt bridle refused comes back, to edit and send again.
      if (!input.value.trim()) input.value = m.text;
      attached = [...m.images, ...attached];
      renderAttachments();
      input.focus();
      break;
  }
});

// ---- images: pasted or dropped, checked here, shown as thumbnails until sent ----

function setImagesOk(ok: boolean | undefined): void {
  imagesOk = ok;
  document.body.dataset.images = ok === undefined ? "" : String(ok);
  input.placeholder = ok
    ? "Ask bridle… (Enter to send, Shift+Enter for a new line, paste or Shift+drop images, /constraint or /decision to pin)"
    : "Ask bridle… (Enter to send, Shift+Enter for a new line, /constraint or /decision to pin)";
}

function showAttachErrors(msgs: string[], cls = "error"): void {
  attachError.replaceChildren(...msgs.map((m) => el("div", cls, m)));
}

function renderAttachments(): void {
  attachments.hidden = attached.length === 0;
  attachments.replaceChildren(
    ...attached.map((img, i) => {
      const box = el("div", "attachment");
      const name = img.name || `image ${i + 1}`;
      const rm = el("button", "remove secondary", "×") as HTMLButtonElement;
      rm.title = `Remove ${name}`;
      rm.setAttribute("aria-label", `Remove ${name}`);
      rm.addEventListener("click", () => {
        attached.splice(i, 1);
        renderAttachments();
        input.focus();
      });
      box.append(thumbnail(img, name), rm);
      return box;
    }),
  );
}

function readBase64(f: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => {
      const url = String(r.result);
      resolve(url.slice(url.indexOf(",") + 1));
    };
    r.onerror = () => reject(r.error ?? new Error("read failed"));
    r.readAsDataURL(f);
  });
}

/** Attaches the files that are images bridle takes; says why the others are not. */
async function addFiles(files: File[]): Promise<void> {
  if (!files.length) return;
  if (!imagesOk) {
    showAttachErrors([
      imagesOk === undefined
        ? "bridle is not connected yet: attach the image again once it has started."
        : "This bridle takes no images in prompts (its initialize does not offer them): update bridle, or describe the image in words.",
    ]);
    return;
  }
  const errors: string[] = [];
  for (const f of files) {
    const bad = checkImage(f);
    if (bad) {
      errors.push(bad);
      continue;
    }
    try {
      attached.push({ mimeType: f.type, data: await readBase64(f), ...(f.name ? { name: f.name } : {}) });
    } catch (err) {
      errors.push(`"${f.name}" could not be read: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  showAttachErrors(errors);
  renderAttachments();
}

input.addEventListener("paste", (e) => {
  const files = Array.from(e.clipboardData?.files ?? []);
  if (!files.length) return;
  // Text pasted with the image (a page's caption, say) still goes in.
  if (!e.clipboardData?.getData("text/plain")) e.preventDefault();
  void addFiles(files);
});
const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes("Files");
// Taken here (default prevented), a drag of files stays with the view: left
// alone, the workbench takes it over to open the files in an editor.
for (const type of ["dragenter", "dragover"] as const) {
  document.body.addEventListener(type, (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    if (e.dataTransfer) e.dataTransfer.dropEffect = "copy";
    document.body.classList.add("dragging");
    // VS Code gives a webview the drop only with Shift held; without it
    // the workbench takes the drag from here on, so say so now.
    if (!e.shiftKey && imagesOk) showAttachErrors(["Hold Shift while dropping to attach images to the prompt."], "note");
  });
}
document.body.addEventListener("dragleave", (e) => {
  if (e.relatedTarget === null) document.body.classList.remove("dragging");
});
document.body.addEventListener("drop", (e) => {
  document.body.classList.remove("dragging");
  const files = Array.from(e.dataTransfer?.files ?? []);
  if (!files.length) return;
  e.preventDefault();
  void addFiles(files);
});

function submit(): void {
  if (running) return;
  const text = input.value;
  if (!text.trim() && !attached.length) return;
  const images = attached;
  input.value = "";
  attached = [];
  renderAttachments();
  showAttachErrors([]);
  updateHint();
  vscode.postMessage({ type: "send", text, images });
}

function updateHint(): void {
  const v = input.value;
  if (!v.startsWith("/") || v.includes(" ")) {
    hint.replaceChildren();
    return;
  }
  const matches = commands.filter((c) => `/${c.name}`.startsWith(v));
  // A command that takes an argument says which (its input hint).
  hint.replaceChildren(...matches.map((c) => el("div", "cmd", `/${c.name}${c.hint ? ` <${c.hint}>` : ""} — ${c.description}`)));
}

input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit();
  }
});
input.addEventListener("input", updateHint);
send.addEventListener("click", submit);
stop.addEventListener("click", () => vscode.postMessage({ type: "stop" }));
$<HTMLButtonElement>("new").addEventListener("click", () => vscode.postMessage({ type: "newChat" }));
$<HTMLButtonElement>("sessions").addEventListener("click", () => vscode.postMessage({ type: "sessions" }));
mode.addEventListener("change", () => vscode.postMessage({ type: "setMode", modeId: mode.value }));

vscode.postMessage({ type: "ready" });

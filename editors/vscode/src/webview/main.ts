// The chat view's script. It renders what the extension host sends and sends
// back what the user does; all session state lives in the host.

import MarkdownIt from "markdown-it";
import type { ToWebview, FromWebview } from "../protocol";
import type { Item } from "../transcript";

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

let commands: { name: string; description: string }[] = [];
let running = false;

function el(tag: string, cls?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
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
  switch (it.kind) {
    case "user":
      node.append(el("div", "who", "You"), el("div", "text", it.text));
      break;
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
      head.append(el("span", "tool-kind", it.toolKind), el("span", "tool-title", it.title), el("span", `badge ${it.status}`, statusLabel[it.status] ?? it.status));
      node.append(head);
      if (it.command) node.append(el("pre", "command", `$ ${it.command}`));
      else if (it.input) node.append(el("pre", "input", it.input));
      if (it.locations.length) node.append(el("div", "locations", it.locations.join(", ")));
      it.diffs.forEach((d, i) => {
        const b = el("button", "link", `Open diff: ${d.path}`);
        b.addEventListener("click", () => vscode.postMessage({ type: "openDiff", itemId: it.id, index: i }));
        node.append(b);
      });
      if (it.output) node.append(el("pre", "output", it.output));
      break;
    }
    case "permission": {
      node.append(el("div", "who", "Approval needed"), el("div", "perm-title", it.title));
      it.diffs.forEach((d, i) => {
        const b = el("button", "link", `Show diff: ${d.path}`);
        b.addEventListener("click", () => vscode.postMessage({ type: "openDiff", itemId: it.id, index: i }));
        node.append(b);
      });
      const row = el("div", "perm-options");
      for (const o of it.options) {
        const b = el("button", o.kind.startsWith("allow") ? "allow" : "secondary reject", o.name) as HTMLButtonElement;
        b.dataset.kind = o.kind;
        b.disabled = it.answer !== undefined;
        if (it.answer === o.optionId) b.classList.add("chosen");
        b.addEventListener("click", () => vscode.postMessage({ type: "answer", itemId: it.id, optionId: o.optionId }));
        row.append(b);
      }
      node.append(row);
      if (it.answer !== undefined) {
        const chosen = it.options.find((o) => o.optionId === it.answer);
        node.append(el("div", "perm-answer", chosen ? `Answered: ${chosen.name}` : "Cancelled"));
      }
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
  if (old) old.replaceWith(fresh);
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
    s.title = c.name;
    s.setAttribute("aria-label", c.name);
    const opts = c.options.flatMap((o) => ("options" in o ? o.options : [o]));
    for (const o of opts) {
      const e = document.createElement("option");
      e.value = o.value;
      e.textContent = o.name;
      s.append(e);
    }
    s.value = c.currentValue;
    s.addEventListener("change", () => vscode.postMessage({ type: "setConfig", configId: c.id, value: s.value }));
    config.append(s);
  }
}

window.addEventListener("message", (ev: MessageEvent<ToWebview>) => {
  const m = ev.data;
  switch (m.type) {
    case "state":
      if (m.items) {
        queued.clear();
        log.replaceChildren();
        for (const it of m.items) upsert(it);
      }
      setRunning(m.running);
      setModes(m);
      commands = m.commands.map((c) => ({ name: c.name, description: c.description }));
      usage.textContent = m.usage ?? "";
      document.body.dataset.session = m.sessionId ?? "";
      updateHint();
      break;
    case "item":
      schedule(m.item);
      break;
    case "usage":
      usage.textContent = m.text;
      break;
  }
});

function submit(): void {
  if (running) return;
  const text = input.value;
  if (!text.trim()) return;
  input.value = "";
  updateHint();
  vscode.postMessage({ type: "send", text });
}

function updateHint(): void {
  const v = input.value;
  if (!v.startsWith("/") || v.includes(" ")) {
    hint.replaceChildren();
    return;
  }
  const matches = commands.filter((c) => `/${c.name}`.startsWith(v));
  hint.replaceChildren(...matches.map((c) => el("div", "cmd", `/${c.name} — ${c.description}`)));
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

// Shared set-up for the unit tests: the bundled extension loaded with the
// stand-in `vscode` module, run against the real bridle binary.
import { createRequire } from "node:module";
import Module from "node:module";
import { mkdtempSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const extRoot = join(here, "..");
const require = createRequire(import.meta.url);
const stubPath = join(here, "vscode-stub.cjs");

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === "vscode") return stubPath;
  return resolve.call(this, request, ...rest);
};

export const vscode = require(stubPath);
export const stub = vscode.__test;
export const ext = require(join(extRoot, "dist", "extension.js"));

export const bridleBin = process.env.BRIDLE_BIN;
if (!bridleBin || !existsSync(bridleBin)) {
  throw new Error("BRIDLE_BIN must name a built bridle binary (run-tests.sh builds one: go build -o /tmp/bridle . in the repo root)");
}

/** A fresh workspace folder and database, the extension activated on them. */
export function activate({ scenario = "chat", settings = {}, extensionPath = extRoot } = {}) {
  stub.reset();
  const dir = mkdtempSync(join(tmpdir(), "bridle-vscode-"));
  const ws = join(dir, "ws");
  require("node:fs").mkdirSync(ws);
  writeFileSync(join(ws, "notes.txt"), "hello\n");
  stub.setFolder(ws);
  Object.assign(stub.settings, {
    "bridle.path": bridleBin,
    "bridle.env": { BRIDLE_DB: join(dir, "bridle.db"), BRIDLE_MODEL: `scripted/${join(here, "scenarios", scenario + ".json")}` },
    ...settings,
  });
  const ctx = stub.extensionContext(extensionPath);
  const api = ext.activate(ctx);
  return { dir, ws, ctx, controller: api.controller, db: join(dir, "bridle.db") };
}

/** Opens the chat view as the workbench would and returns the page handle. */
export function openView() {
  const provider = stub.registry.views.get("bridle.chat");
  if (!provider) throw new Error("the chat view provider was not registered");
  const view = stub.webviewView();
  provider.resolveWebviewView(view, {}, { isCancellationRequested: false });
  return view;
}

/** Reactivation in the same folder and database, as after a window reload. */
export function reactivate(prev) {
  ext.deactivate();
  for (const d of prev.ctx.subscriptions) d.dispose?.();
  const keep = { ...stub.settings };
  stub.reset();
  Object.assign(stub.settings, keep);
  const ctx = stub.extensionContext(extRoot, prev.ctx.state); // workspaceState survives a reload
  const api = ext.activate(ctx);
  return { ...prev, ctx, controller: api.controller };
}

export function deactivate(t) {
  ext.deactivate();
  for (const d of t.ctx.subscriptions) d.dispose?.();
}

export const agentText = (items) => items.filter((i) => i.kind === "agent").map((i) => i.text).join("");
export const lastState = (view) => [...view.posted].reverse().find((m) => m.type === "state");
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function until(pred, ms = 10000, what = "a condition") {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await pred();
    if (v) return v;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

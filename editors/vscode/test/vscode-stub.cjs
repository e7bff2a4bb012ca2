// A stand-in for the `vscode` module: just enough of the API the extension
// uses, recording what it is asked to show and letting tests answer dialogs.
// The real workbench is exercised by e2e/run.mjs; this one keeps the protocol
// tests fast.

"use strict";
const fs = require("node:fs");
const path = require("node:path");

class EventEmitter {
  constructor() {
    this.listeners = new Set();
    this.event = (fn) => {
      this.listeners.add(fn);
      return { dispose: () => this.listeners.delete(fn) };
    };
  }
  fire(v) {
    for (const fn of [...this.listeners]) fn(v);
  }
  dispose() {
    this.listeners.clear();
  }
}

class Uri {
  constructor(scheme, p, query = "") {
    this.scheme = scheme;
    this.path = p;
    this.query = query;
  }
  get fsPath() {
    return this.path;
  }
  toString() {
    return `${this.scheme}:${this.path}${this.query ? "?" + this.query : ""}`;
  }
  static file(p) {
    return new Uri("file", p);
  }
  static from(c) {
    return new Uri(c.scheme, c.path ?? "", c.query ?? "");
  }
  static joinPath(u, ...parts) {
    return new Uri(u.scheme, path.join(u.path, ...parts), u.query);
  }
}

const FileType = { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 };

class Position {
  constructor(line, character) {
    this.line = line;
    this.character = character;
  }
}

class Range {
  constructor(start, end) {
    this.start = start;
    this.end = end;
  }
}

/**
 * A text document as VS Code keeps it: its text (unsaved changes included),
 * whether it is dirty, and an undo stack of whole texts.
 */
class TextDocument {
  constructor(uri, text) {
    this.uri = uri;
    this.text = text;
    this.isDirty = false;
    this.undoStack = [];
  }
  get fileName() {
    return this.uri.fsPath;
  }
  get lineCount() {
    return this.text.split("\n").length;
  }
  getText() {
    return this.text;
  }
  positionAt(offset) {
    const before = this.text.slice(0, Math.max(0, Math.min(offset, this.text.length))).split("\n");
    return new Position(before.length - 1, before.at(-1).length);
  }
  offsetAt(pos) {
    const lines = this.text.split("\n");
    let off = 0;
    for (let i = 0; i < pos.line && i < lines.length; i++) off += lines[i].length + 1;
    return Math.min(off + pos.character, this.text.length);
  }
  /** As the user typing would: the buffer changes, the disk does not. */
  type(text) {
    this.undoStack.push(this.text);
    this.text = text;
    this.isDirty = true;
  }
  undo() {
    if (this.undoStack.length) this.text = this.undoStack.pop();
    this.isDirty = true;
  }
  async save() {
    calls.push({ kind: "save", path: this.uri.fsPath });
    if (answers.save && !answers.save(this)) return false;
    fs.writeFileSync(this.uri.fsPath, this.text);
    this.isDirty = false;
    return true;
  }
}

class WorkspaceEdit {
  constructor() {
    this.edits = [];
  }
  replace(uri, range, newText, metadata) {
    this.edits.push({ uri, range, newText, metadata });
  }
}

const textDocuments = [];

/** A document without unsaved changes follows its file, as VS Code's file watcher makes it. */
function sync(doc) {
  if (!doc.isDirty && doc.uri.scheme === "file" && fs.existsSync(doc.uri.fsPath)) doc.text = fs.readFileSync(doc.uri.fsPath, "utf8");
  return doc;
}

function findDocument(uri) {
  const doc = textDocuments.find((d) => d.uri.toString() === uri.toString());
  return doc && sync(doc);
}

/** Opens a file's document from disk, as openTextDocument does (no editor shown). */
function loadDocument(uri) {
  let doc = findDocument(uri);
  if (doc) return doc;
  const text = fs.readFileSync(uri.fsPath, "utf8"); // throws for a missing file, as VS Code rejects
  doc = new TextDocument(uri, text);
  textDocuments.push(doc);
  return doc;
}

/** What the extension asked the workbench to do, in order. */
const calls = [];
/** Tests set these to answer dialogs; the default leaves a dialog open. */
const answers = {
  message: null, // (kind, text, items) => item | undefined | Promise
  quickPick: null, // (items, options) => item | undefined
  applyEdit: null, // (edit) => false to refuse it
  save: null, // (doc) => false to fail the save
};
const registry = { commands: new Map(), views: new Map(), providers: new Map() };
const settings = {};
let folder = process.cwd();

function message(kind) {
  return (text, ...items) => {
    // showXMessage(text, {modal, detail}, ...items): the options are kept apart.
    const options = items.length && typeof items[0] === "object" && items[0] !== null && !("title" in items[0]) ? items.shift() : undefined;
    calls.push({ kind, text, items, options });
    if (!answers.message) return new Promise(() => {});
    return Promise.resolve(answers.message(kind, text, items));
  };
}

function statusBarItem() {
  return {
    text: "",
    tooltip: "",
    name: "",
    command: undefined,
    visible: false,
    show() {
      this.visible = true;
    },
    hide() {
      this.visible = false;
    },
    dispose() {},
  };
}

const window = {
  createOutputChannel(name) {
    const lines = [];
    return { name, lines, appendLine: (l) => lines.push(l), append: (l) => lines.push(l), show() {}, dispose() {} };
  },
  createStatusBarItem: () => (window.lastStatusBarItem = statusBarItem()),
  lastStatusBarItem: undefined,
  registerWebviewViewProvider(id, provider) {
    registry.views.set(id, provider);
    return { dispose: () => registry.views.delete(id) };
  },
  showInformationMessage: message("info"),
  showWarningMessage: message("warning"),
  showErrorMessage: message("error"),
  async showQuickPick(items, options) {
    items = await items;
    calls.push({ kind: "quickPick", items, options });
    return answers.quickPick ? answers.quickPick(items, options) : undefined;
  },
  async showTextDocument(doc, options) {
    calls.push({ kind: "showTextDocument", doc, options });
    return {};
  },
};

const commands = {
  registerCommand(id, fn) {
    if (registry.commands.has(id)) throw new Error(`command ${id} registered twice`);
    registry.commands.set(id, fn);
    return { dispose: () => registry.commands.delete(id) };
  },
  async executeCommand(id, ...args) {
    calls.push({ kind: "command", id, args });
    const fn = registry.commands.get(id);
    return fn ? fn(...args) : undefined;
  },
};

const configChanged = new EventEmitter();
const workspace = {
  onDidChangeConfiguration: configChanged.event,
  get workspaceFolders() {
    return [{ uri: Uri.file(folder), name: path.basename(folder), index: 0 }];
  },
  getConfiguration(section) {
    return {
      get: (key, def) => {
        const v = settings[`${section}.${key}`];
        return v === undefined ? def : v;
      },
    };
  },
  registerTextDocumentContentProvider(scheme, provider) {
    registry.providers.set(scheme, provider);
    return { dispose: () => registry.providers.delete(scheme) };
  },
  async openTextDocument(arg) {
    calls.push({ kind: "openTextDocument", arg });
    if (arg instanceof Uri) return loadDocument(arg);
    if (typeof arg === "string") return loadDocument(Uri.file(arg));
    return new TextDocument(new Uri("untitled", "Untitled-1"), arg?.content ?? "");
  },
  get textDocuments() {
    return textDocuments.map(sync);
  },
  async applyEdit(edit) {
    calls.push({ kind: "applyEdit", edit });
    if (answers.applyEdit && answers.applyEdit(edit) === false) return false;
    for (const e of edit.edits) {
      const doc = loadDocument(e.uri);
      const start = doc.offsetAt(e.range.start);
      const end = doc.offsetAt(e.range.end);
      // One undo step for the whole edit, as VS Code makes of a WorkspaceEdit.
      doc.type(doc.text.slice(0, start) + e.newText + doc.text.slice(end));
    }
    return true;
  },
  fs: {
    readFile: async (uri) => new Uint8Array(fs.readFileSync(uri.fsPath)),
    writeFile: async (uri, data) => fs.writeFileSync(uri.fsPath, data),
    stat: async (uri) => {
      const st = fs.statSync(uri.fsPath);
      return { type: st.isDirectory() ? FileType.Directory : FileType.File, size: st.size, ctime: st.ctimeMs, mtime: st.mtimeMs };
    },
  },
};

/** A webview view whose page is the test: it records posts and can send messages. */
function webviewView() {
  const received = new EventEmitter();
  const disposed = new EventEmitter();
  const posted = [];
  const waiters = [];
  const webview = {
    options: {},
    html: "",
    cspSource: "vscode-resource:",
    asWebviewUri: (u) => u,
    postMessage(m) {
      posted.push(JSON.parse(JSON.stringify(m)));
      for (const w of [...waiters]) w();
      return Promise.resolve(true);
    },
    onDidReceiveMessage: received.event,
  };
  return {
    webview,
    posted,
    onDidDispose: disposed.event,
    /** Sends a message as the page would. */
    send: (m) => received.fire(m),
    /** Resolves once a message posted at index `since` or later satisfies pred. */
    waitFor(pred, ms = 10000, what = "a message", since = 0) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = posted.slice(since).find(pred);
          if (m) {
            waiters.splice(waiters.indexOf(check), 1);
            clearTimeout(t);
            resolve(m);
          }
        };
        const t = setTimeout(() => {
          waiters.splice(waiters.indexOf(check), 1);
          reject(new Error(`timed out waiting for ${what}; last posts: ${JSON.stringify(posted.slice(-3))}`));
        }, ms);
        t.unref(); // a wait that lost a race must not hold the test process open
        waiters.push(check);
        check();
      });
    },
  };
}

/** A context; pass the previous one's state to keep workspaceState across a reload. */
function extensionContext(extensionPath, state = new Map()) {
  return {
    subscriptions: [],
    extensionUri: Uri.file(extensionPath),
    extension: { packageJSON: JSON.parse(fs.readFileSync(path.join(extensionPath, "package.json"), "utf8")) },
    state,
    workspaceState: {
      get: (k, d) => (state.has(k) ? state.get(k) : d),
      update: async (k, v) => void state.set(k, v),
      keys: () => [...state.keys()],
    },
  };
}

module.exports = {
  EventEmitter,
  Uri,
  FileType,
  Position,
  Range,
  WorkspaceEdit,
  StatusBarAlignment: { Left: 1, Right: 2 },
  ViewColumn: { Active: -1, Beside: -2, One: 1 },
  window,
  commands,
  workspace,
  // test helpers, not part of the real API
  __test: {
    calls,
    answers,
    registry,
    settings,
    webviewView,
    extensionContext,
    setFolder: (f) => (folder = f),
    /** The document VS Code holds for a path, opening it as a user would. */
    openDocument: (p) => loadDocument(Uri.file(p)),
    findDocument: (p) => findDocument(Uri.file(p)),
    /** Changes settings and tells listeners, as the Settings editor would. */
    configure(values) {
      Object.assign(settings, values);
      configChanged.fire({ affectsConfiguration: (k) => Object.keys(values).some((v) => v === k || v.startsWith(k + ".")) });
    },
    reset() {
      calls.length = 0;
      answers.message = null;
      answers.quickPick = null;
      answers.applyEdit = null;
      answers.save = null;
      textDocuments.length = 0;
      registry.commands.clear();
      registry.views.clear();
      registry.providers.clear();
      for (const k of Object.keys(settings)) delete settings[k];
    },
  },
};

// Unit tests of the extension host side: the bundled extension, a stand-in
// vscode module, and the real bridle binary playing a scripted scenario.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { stub, ext, extRoot, activate, openView, reactivate, deactivate, agentText, lastState, until, bridleBin } from "./helpers.mjs";

const pkg = JSON.parse(readFileSync(join(extRoot, "package.json"), "utf8"));

after(() => ext.deactivate());

test("package.json declares exactly the commands the extension registers", () => {
  const t = activate();
  try {
    const declared = pkg.contributes.commands.map((c) => c.command).sort();
    const registered = [...stub.registry.commands.keys()].sort();
    assert.deepEqual(registered, declared);
    assert.deepEqual([...ext.commandIds].sort(), declared);
    const titles = Object.fromEntries(pkg.contributes.commands.map((c) => [c.command, `${c.category}: ${c.title}`]));
    assert.deepEqual(titles, {
      "bridle.newChat": "bridle: New Chat",
      "bridle.stop": "bridle: Stop",
      "bridle.resumeSession": "bridle: Resume Session",
      "bridle.showEventLog": "bridle: Show Event Log",
      "bridle.selectMode": "bridle: Select Mode",
    });
    // The view the provider serves is the one package.json puts in the sidebar.
    const views = Object.values(pkg.contributes.views).flat();
    assert.deepEqual(views.map((v) => v.id), [...stub.registry.views.keys()]);
    for (const menu of pkg.contributes.menus["view/title"]) assert.ok(declared.includes(menu.command), menu.command);
  } finally {
    deactivate(t);
  }
});

test("a missing binary gives an error that names the bridle.path setting", async () => {
  const t = activate({ settings: { "bridle.path": "/nonexistent/bridle" } });
  try {
    await t.controller.newChat();
    const err = stub.calls.find((c) => c.kind === "error");
    assert.ok(err, "an error message is shown");
    assert.match(err.text, /"\/nonexistent\/bridle" was not found/);
    assert.match(err.text, /bridle\.path/);
    assert.deepEqual(err.items, ["Open Settings"]);
    const notice = t.controller.items().find((i) => i.kind === "notice");
    assert.equal(notice?.level, "error");
  } finally {
    deactivate(t);
  }
});

test("opening the view starts a session; a prompt streams into the transcript", async () => {
  const t = activate();
  try {
    const view = openView();
    assert.match(view.webview.html, /Content-Security-Policy/);
    assert.match(view.webview.html, /webview\.js/);
    view.send({ type: "ready" });
    await until(() => t.controller.sessionId, 10000, "a session");
    const modes = lastState(view).modes ?? (await view.waitFor((m) => m.type === "state" && m.modes, 5000, "modes")).modes;
    assert.deepEqual(
      modes.availableModes.map((m) => m.id),
      ["read-only", "ask", "auto-edit", "full-auto"],
    );

    const mark = view.posted.length;
    view.send({ type: "send", text: "hello there" });
    const busy = view.posted.indexOf(await view.waitFor((m) => m.type === "state" && m.running === true, 5000, "running state", mark));
    await view.waitFor((m) => m.type === "state" && m.running === false, 10000, "the turn to end", busy);
    const items = t.controller.items();
    assert.equal(items[0].kind, "user");
    assert.equal(items[0].text, "hello there");
    assert.equal(agentText(items), "Hello from **bridle**. This answer streams in word by word.");
    // The answer arrived as several posts of one growing item, not all at once.
    const agentPosts = view.posted.filter((m) => m.type === "item" && m.item.kind === "agent");
    assert.ok(agentPosts.length >= 4, `expected streamed posts, got ${agentPosts.length}`);
    assert.ok(agentPosts[0].item.text.length < agentPosts.at(-1).item.text.length);
    assert.equal(new Set(agentPosts.map((m) => m.item.id)).size, 1);
    // No stop-reason notice for a normal end of turn.
    assert.equal(items.filter((i) => i.kind === "notice").length, 0);
  } finally {
    deactivate(t);
  }
});

test("usage_update drives the status bar item", async () => {
  const t = activate();
  try {
    await t.controller.newChat();
    await t.controller.send("hello");
    const sb = t.controller.statusBar();
    await until(() => sb.visible, 5000, "the status bar item");
    assert.match(sb.text, /^ctx \d{1,3}% · \d+(\.\d)?[kM]?\/\d+(\.\d)?[kM]?$/);
    assert.match(sb.tooltip, /tokens in use/);
    assert.equal(sb.command, "bridle.chat.focus");
  } finally {
    deactivate(t);
  }
});

test("Select Mode changes the session's mode through session/set_mode", async () => {
  const t = activate();
  try {
    await t.controller.newChat();
    assert.equal(t.controller.modes.currentModeId, "ask");
    stub.answers.quickPick = (items) => items.find((i) => i.id === "read-only");
    await stub.registry.commands.get("bridle.selectMode")();
    assert.equal(t.controller.modes.currentModeId, "read-only");
    const pick = stub.calls.find((c) => c.kind === "quickPick");
    assert.deepEqual(pick.items.map((i) => i.id), ["read-only", "ask", "auto-edit", "full-auto"]);
    // bridle keeps the mode: its log records the change.
    const log = execFileSync(bridleBin, ["log", t.controller.sessionId], { env: { ...process.env, BRIDLE_DB: t.db } }).toString();
    assert.match(log, /mode_changed/);
    assert.match(log, /read-only/);
  } finally {
    deactivate(t);
  }
});

test("Stop during a slow stream ends the turn as cancelled", async (tc) => {
  const t = activate();
  try {
    const view = openView();
    await t.controller.newChat();
    const turn = t.controller.send("a slow answer please");
    await until(() => agentText(t.controller.items()).length > 0, 10000, "the first chunk");
    const started = Date.now();
    await stub.registry.commands.get("bridle.stop")();
    await turn;
    const took = Date.now() - started;
    const items = t.controller.items();
    const notice = items.find((i) => i.kind === "notice");
    assert.equal(notice?.text, "Stopped: the turn was cancelled.");
    assert.equal(notice?.level, "warning");
    assert.ok(!agentText(items).includes("longer still"), "the stream was cut short");
    assert.equal(t.controller.running, false);
    assert.equal(lastState(view).running, false);
    assert.ok(took < 5000, `cancel took ${took} ms`);
    tc.diagnostic(`Stop to the end of the turn: ${took} ms`);
    // The session still works after a cancel.
    await t.controller.send("hello again");
    assert.match(agentText(t.controller.items()), /Hello from \*\*bridle\*\*/);
  } finally {
    deactivate(t);
  }
});

test("Resume Session after a reload replays the history from session/load", async () => {
  let t = activate();
  try {
    await t.controller.newChat();
    await t.controller.send("hello from before the reload");
    const sessionId = t.controller.sessionId;
    const before = agentText(t.controller.items());

    t = reactivate(t); // a new extension host and a new bridle process
    const view = openView();
    stub.answers.quickPick = (items) => items.find((i) => i.id === sessionId);
    await stub.registry.commands.get("bridle.resumeSession")();
    const pick = stub.calls.find((c) => c.kind === "quickPick");
    const row = pick.items.find((i) => i.id === sessionId);
    assert.ok(row, "the session is listed");
    assert.equal(row.label, "hello from before the reload", "the picker shows the title; the id is the detail");
    assert.equal(row.detail, sessionId);
    assert.equal(t.controller.sessionId, sessionId);
    const items = t.controller.items();
    const user = items.find((i) => i.kind === "user");
    assert.equal(user?.text, "hello from before the reload");
    assert.equal(agentText(items), before);
    const reset = [...view.posted].reverse().find((m) => m.type === "state" && m.items);
    assert.ok(reset, "the view got the whole transcript");
    // The resumed session takes new prompts.
    await t.controller.send("hello after");
    assert.equal(t.controller.items().filter((i) => i.kind === "user").length, 2);
  } finally {
    deactivate(t);
  }
});

test("/constraint and /decision are pinned, and Show Event Log opens `bridle log`", async () => {
  const t = activate();
  try {
    const view = openView();
    await t.controller.newChat();
    const st = await view.waitFor((m) => m.type === "state" && m.commands?.some((c) => c.name === "constraint"), 5000, "available commands");
    assert.ok(st.commands.some((c) => c.name === "decision"));
    await t.controller.send("/constraint never touch the tests folder");
    await t.controller.send("/decision use tabs for indentation");
    await stub.registry.commands.get("bridle.showEventLog")();
    const open = stub.calls.find((c) => c.kind === "openTextDocument");
    assert.ok(open, "a document was opened");
    assert.match(open.arg.content, /constraint_pinned/);
    assert.match(open.arg.content, /never touch the tests folder/);
    assert.match(open.arg.content, /decision_recorded/);
    assert.ok(stub.calls.some((c) => c.kind === "showTextDocument"));
  } finally {
    deactivate(t);
  }
});

test("when bridle dies, the next prompt restarts it and continues the same session", async () => {
  const t = activate();
  try {
    const view = openView();
    await t.controller.newChat();
    await t.controller.send("hello before the crash");
    const id = t.controller.sessionId;
    const pid = t.controller.agentPid();
    assert.ok(pid, "bridle runs");
    process.kill(pid, "SIGKILL");
    await until(() => !t.controller.sessionId, 5000, "the exit to be noticed");
    await t.controller.send("hello after the crash");
    assert.equal(t.controller.sessionId, id, "the same session");
    assert.notEqual(t.controller.agentPid(), pid, "a new process");
    const items = t.controller.items();
    const users = items.filter((i) => i.kind === "user").map((i) => i.text);
    assert.deepEqual(users, ["hello before the crash", "hello after the crash"]);
    assert.ok(items.some((i) => i.kind === "notice" && /restarted/.test(i.text)));
    assert.equal(agentText(items).match(/word by word\./g)?.length, 2);
    assert.equal(lastState(view).sessionId, id);
  } finally {
    deactivate(t);
  }
});

test("bridle.args reach bridle and `bridle log`: --db in args picks the database", async () => {
  const t = activate();
  try {
    const other = join(t.dir, "other.db");
    stub.settings["bridle.args"] = ["--db", other];
    stub.settings["bridle.env"] = { BRIDLE_MODEL: stub.settings["bridle.env"].BRIDLE_MODEL };
    await t.controller.newChat();
    await t.controller.send("hello args");
    const out = execFileSync(bridleBin, ["--db", other, "sessions"]).toString();
    assert.match(out, new RegExp(t.controller.sessionId));
    await stub.registry.commands.get("bridle.showEventLog")();
    const open = stub.calls.find((c) => c.kind === "openTextDocument");
    assert.match(open.arg.content, /hello args/);
  } finally {
    deactivate(t);
  }
});

test("after a reload the chat view reopens the workspace's last session by itself", async () => {
  let t = activate();
  try {
    await t.controller.newChat();
    await t.controller.send("hello before the reload");
    const id = t.controller.sessionId;
    t = reactivate(t);
    const view = openView();
    view.send({ type: "ready" });
    await until(() => t.controller.items().some((i) => i.kind === "notice" && i.text.startsWith("Reopened")), 10000, "the restored session");
    assert.equal(t.controller.sessionId, id);
    const items = t.controller.items();
    assert.equal(items.find((i) => i.kind === "user")?.text, "hello before the reload");
    // The notice and the header name the session by its title (session/list's), not its id.
    assert.equal(items.at(-1).text, "Reopened the last session: hello before the reload");
    assert.equal(t.controller.title, "hello before the reload");
    assert.equal((await view.waitFor((m) => m.type === "state" && m.sessionId === id && m.title, 5000, "the title in the view")).title, "hello before the reload");
    assert.ok(!stub.calls.some((c) => c.kind === "quickPick"), "no question asked");

    // With the setting off, the view starts a new session instead.
    t = reactivate(t);
    stub.settings["bridle.restoreLastSession"] = false;
    const view2 = openView();
    view2.send({ type: "ready" });
    await until(() => t.controller.sessionId, 10000, "a session");
    assert.notEqual(t.controller.sessionId, id);
    assert.equal(t.controller.items().length, 0);
  } finally {
    deactivate(t);
  }
});

test("with no model configured, the prompt's error says what to set; fixing bridle.env restarts bridle", async () => {
  const saved = {};
  for (const k of ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "BRIDLE_MODEL"]) {
    saved[k] = process.env[k];
    delete process.env[k];
  }
  const t = activate();
  try {
    const env = { BRIDLE_DB: t.db, XDG_CONFIG_HOME: join(t.dir, "config") };
    stub.settings["bridle.env"] = env;
    await t.controller.newChat();
    const pid = t.controller.agentPid();
    await t.controller.send("hello");
    const err = stub.calls.find((c) => c.kind === "error");
    assert.ok(err, "an error is shown");
    assert.match(err.text, /ANTHROPIC_API_KEY/);
    assert.match(err.text, /BRIDLE_MODEL/);
    assert.deepEqual(err.items, ["Open Settings"]);
    // The user sets a model: bridle restarts with it and the prompt works.
    stub.configure({ "bridle.env": { ...env, BRIDLE_MODEL: `scripted/${join(extRoot, "test", "scenarios", "chat.json")}` } });
    await until(() => t.controller.agentPid() !== pid, 5000, "bridle to stop");
    await t.controller.send("hello");
    assert.match(agentText(t.controller.items()), /word by word/);
  } finally {
    deactivate(t);
    for (const [k, v] of Object.entries(saved)) if (v !== undefined) process.env[k] = v;
  }
});

test("a tool card's item names the path and keeps the raw arguments for the expander; its link opens the file", async () => {
  const t = activate();
  try {
    const view = openView();
    await t.controller.newChat();
    await t.controller.send("please read the notes");
    const tool = t.controller.items().find((i) => i.kind === "tool");
    assert.ok(tool, "a tool card");
    assert.equal(tool.status, "completed");
    assert.equal(tool.title, "Read notes.txt");
    assert.equal(tool.path, "notes.txt");
    assert.deepEqual(tool.locations.map((l) => l.path), [join(t.ws, "notes.txt")]);
    assert.deepEqual(JSON.parse(tool.args), { path: "notes.txt" });
    assert.equal(tool.command, undefined);
    // The state tells the view the workspace folder, so paths show relative to it.
    assert.equal(lastState(view).root, t.ws);

    view.send({ type: "openFile", path: tool.locations[0].path, line: 3 });
    const shown = await until(() => stub.calls.find((c) => c.kind === "showTextDocument"), 5000, "the file to open");
    assert.equal(shown.doc.fsPath, join(t.ws, "notes.txt"));
    assert.equal(shown.options.selection.start.line, 2);
    // A relative path resolves in the workspace; a folder is revealed in the explorer.
    view.send({ type: "openFile", path: "." });
    const reveal = await until(() => stub.calls.find((c) => c.kind === "command" && c.id === "revealInExplorer"), 5000, "revealInExplorer");
    assert.equal(reveal.args[0].fsPath, t.ws);
  } finally {
    deactivate(t);
  }
});

test("session_info_update after the first prompt puts the title in the view's header; New Chat clears it", async () => {
  const t = activate();
  try {
    const view = openView();
    view.send({ type: "ready" });
    await until(() => t.controller.sessionId, 10000, "a session");
    assert.equal(lastState(view).title, undefined);
    const mark = view.posted.length;
    await t.controller.send("hello, what a title\nand not this line");
    const st = await view.waitFor((m) => m.type === "state" && m.title, 5000, "a state with the title", mark);
    assert.equal(st.title, "hello, what a title");
    assert.equal(t.controller.title, "hello, what a title");
    await t.controller.newChat();
    assert.equal(t.controller.title, undefined);
    assert.equal(lastState(view).title, undefined);
  } finally {
    deactivate(t);
  }
});

test("the plan tool's updates fold into one plan item, replaced in place, and session/load replays it", async () => {
  let t = activate();
  try {
    const view = openView();
    await t.controller.newChat();
    await t.controller.send("make a plan for the fix");
    const plans = () => t.controller.items().filter((i) => i.kind === "plan");
    assert.equal(plans().length, 1);
    const first = plans()[0];
    assert.deepEqual(first.entries.map((e) => [e.content, e.status]), [
      ["Look at the code", "in_progress"],
      ["Write the fix", "pending"],
      ["Run the tests", "pending"],
    ]);
    const card = t.controller.items().find((i) => i.kind === "tool");
    assert.equal(card.setsPlan, true, "the plan call's card is marked, so the view does not repeat the plan");

    await t.controller.send("mark the first step done");
    assert.equal(plans().length, 1, "the second update replaces the plan; it adds none");
    assert.equal(plans()[0].id, first.id);
    assert.deepEqual(plans()[0].entries.map((e) => e.status), ["completed", "in_progress", "pending"]);
    const posts = view.posted.filter((m) => m.type === "item" && m.item.kind === "plan");
    assert.equal(posts.length, 2);
    assert.ok(posts.every((m) => m.item.id === first.id), "both posts update the same item in the view");

    const id = t.controller.sessionId;
    t = reactivate(t);
    openView();
    stub.answers.quickPick = (items) => items.find((i) => i.id === id);
    await stub.registry.commands.get("bridle.resumeSession")();
    assert.equal(plans().length, 1, "the replay folds both plan updates into one item");
    assert.deepEqual(plans()[0].entries.map((e) => e.status), ["completed", "in_progress", "pending"]);
  } finally {
    deactivate(t);
  }
});

test("a command in the background keeps its card in progress, its output streamed, until it ends", async () => {
  const t = activate();
  try {
    await t.controller.newChat();
    await t.controller.setMode("full-auto");
    await t.controller.send("bg server go");
    const card = () => t.controller.items().find((i) => i.kind === "tool" && i.title === "a server (in the background)");
    assert.ok(card(), "the command's card");
    assert.equal(card().status, "in_progress", "the card stays live after the turn");
    await until(() => (card().output ?? "").includes("bg-ready"), 10000, "its output streamed into the card");
    await t.controller.send("bg finish go");
    await until(() => card().status === "completed", 10000, "the card completed when the command ended");
    assert.match(card().output, /bg-got bye/);
  } finally {
    deactivate(t);
  }
});

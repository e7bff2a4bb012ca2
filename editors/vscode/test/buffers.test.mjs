// The editor's buffers (ACP fs/read_text_file and fs/write_text_file): the
// handlers on their own, then through the real bridle, whose read_file and
// edit_file use them when initialize offers clientCapabilities.fs.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stub, ext, activate, openView, deactivate, until } from "./helpers.mjs";

after(() => ext.deactivate());

/** Asserts that p rejects with a JSON-RPC error of this code whose message matches re. */
async function rejectsWith(p, code, re) {
  await assert.rejects(p, (err) => {
    assert.equal(err.code, code, `code of ${err.message}`);
    assert.match(err.message, re);
    return true;
  });
}

// ---- the handlers ----

test("sliceLines: 1-based line and limit, each line with its ending", () => {
  const text = "a\nb\r\nc\nd";
  assert.equal(ext.sliceLines(text), text);
  assert.equal(ext.sliceLines(text, 2), "b\r\nc\nd");
  assert.equal(ext.sliceLines(text, 2, 2), "b\r\nc\n");
  assert.equal(ext.sliceLines(text, null, 1), "a\n");
  assert.equal(ext.sliceLines(text, 9), "");
  assert.equal(ext.sliceLines(text, 1, 0), "");
  assert.throws(() => ext.sliceLines(text, 0), /line must be a whole number from 1/);
  assert.throws(() => ext.sliceLines(text, 1, -1), /limit must be a whole number from 0/);
});

test("fs/read_text_file answers from the open document, unsaved text included, else from disk", async () => {
  const t = activate();
  try {
    const notes = join(t.ws, "notes.txt");
    assert.deepEqual(await ext.readTextFile({ sessionId: "s", path: notes }), { content: "hello\n" });
    const doc = stub.openDocument(notes);
    doc.type("hello\nnot saved yet\nthird\n");
    assert.deepEqual(await ext.readTextFile({ sessionId: "s", path: notes }), { content: "hello\nnot saved yet\nthird\n" });
    assert.deepEqual(await ext.readTextFile({ sessionId: "s", path: notes, line: 2, limit: 1 }), { content: "not saved yet\n" });
    assert.equal(readFileSync(notes, "utf8"), "hello\n", "reading saves nothing");
    // A byte-order mark is not part of the text, as VS Code shows it.
    writeFileSync(join(t.ws, "bom.txt"), "\ufeffwith a mark\n");
    assert.deepEqual(await ext.readTextFile({ sessionId: "s", path: join(t.ws, "bom.txt") }), { content: "with a mark\n" });
  } finally {
    deactivate(t);
  }
});

test("fs/read_text_file errors name the path and what is wrong", async () => {
  const t = activate();
  try {
    await rejectsWith(ext.readTextFile({ sessionId: "s", path: join(t.ws, "missing.txt") }), -32002, /missing\.txt does not exist/);
    await rejectsWith(ext.readTextFile({ sessionId: "s", path: "notes.txt" }), -32602, /path must be absolute, got "notes\.txt"/);
    await rejectsWith(ext.readTextFile({ sessionId: "s", path: join(t.ws, "notes.txt"), line: 0 }), -32602, /line must be/);
    await rejectsWith(ext.readTextFile({ sessionId: "s", path: t.ws }), -32603, /could not read/);
  } finally {
    deactivate(t);
  }
});

test("fs/write_text_file on a clean file replaces the document in one edit and saves it", async () => {
  const t = activate();
  try {
    const notes = join(t.ws, "notes.txt");
    assert.deepEqual(await ext.writeTextFile({ sessionId: "s", path: notes, content: "new text\n" }), {});
    const edits = stub.calls.filter((c) => c.kind === "applyEdit");
    assert.equal(edits.length, 1);
    assert.equal(edits[0].edit.edits.length, 1, "one replacement of the whole document");
    const doc = stub.findDocument(notes);
    assert.equal(doc.getText(), "new text\n");
    assert.equal(doc.isDirty, false, "saved");
    assert.equal(readFileSync(notes, "utf8"), "new text\n");
    // The same text again changes nothing and saves nothing.
    const saves = stub.calls.filter((c) => c.kind === "save").length;
    await ext.writeTextFile({ sessionId: "s", path: notes, content: "new text\n" });
    assert.equal(stub.calls.filter((c) => c.kind === "save").length, saves);
    assert.equal(stub.calls.filter((c) => c.kind === "applyEdit").length, 1);
  } finally {
    deactivate(t);
  }
});

test("fs/write_text_file on a dirty document leaves it dirty; one undo takes the edit back", async () => {
  const t = activate();
  try {
    const notes = join(t.ws, "notes.txt");
    const doc = stub.openDocument(notes);
    doc.type("hello\nmine, unsaved\n");
    await ext.writeTextFile({ sessionId: "s", path: notes, content: "hello, bridle\nmine, unsaved\n" });
    assert.equal(doc.getText(), "hello, bridle\nmine, unsaved\n");
    assert.equal(doc.isDirty, true);
    assert.equal(stub.calls.filter((c) => c.kind === "save").length, 0, "not saved");
    assert.equal(readFileSync(notes, "utf8"), "hello\n", "the disk is untouched");
    doc.undo();
    assert.equal(doc.getText(), "hello\nmine, unsaved\n");
  } finally {
    deactivate(t);
  }
});

test("fs/write_text_file failures say what happened to the buffer and the disk", async () => {
  const t = activate();
  try {
    const notes = join(t.ws, "notes.txt");
    stub.answers.applyEdit = () => false;
    await rejectsWith(ext.writeTextFile({ sessionId: "s", path: notes, content: "x\n" }), -32603, /refused the edit to .*notes\.txt.*unchanged/);
    assert.equal(readFileSync(notes, "utf8"), "hello\n");
    stub.answers.applyEdit = null;
    stub.answers.save = () => false;
    await rejectsWith(ext.writeTextFile({ sessionId: "s", path: notes, content: "x\n" }), -32603, /new text is in VS Code's buffer of .*notes\.txt, but VS Code did not save it/);
    await rejectsWith(ext.writeTextFile({ sessionId: "s", path: "rel.txt", content: "x" }), -32602, /path must be absolute/);
    // A file that does not exist is created on disk: no buffer holds text for it.
    await ext.writeTextFile({ sessionId: "s", path: join(t.ws, "new.txt"), content: "fresh\n" });
    assert.equal(readFileSync(join(t.ws, "new.txt"), "utf8"), "fresh\n");
  } finally {
    deactivate(t);
  }
});

// ---- through bridle ----

async function autoEdit(t) {
  await t.controller.newChat();
  await t.controller.setMode("auto-edit");
}

/** The last tool card whose title names this file. */
const toolOf = (t, file) => t.controller.items().filter((i) => i.kind === "tool" && i.title.includes(file)).at(-1);

test("bridle's read_file sees the text the user has not saved", async () => {
  const t = activate();
  try {
    openView();
    writeFileSync(join(t.ws, "draft.txt"), "first line\nsecond line\n");
    stub.openDocument(join(t.ws, "draft.txt")).type("first line\nsecond line\nmy unsaved note\n");
    await autoEdit(t);
    await t.controller.send("please read the draft");
    const tool = toolOf(t, "draft.txt");
    assert.equal(tool?.status, "completed", JSON.stringify(tool));
    assert.match(tool.output, /from the editor's buffer/);
    assert.match(tool.output, /my unsaved note/);
  } finally {
    deactivate(t);
  }
});

test("bridle's edit_file lands in a dirty buffer, unsaved; an unopened file's edit reaches the disk", async () => {
  const t = activate();
  try {
    openView();
    const draft = join(t.ws, "draft.txt");
    const closed = join(t.ws, "closed.txt");
    writeFileSync(draft, "first line\nsecond line\n");
    writeFileSync(closed, "closed\n");
    const doc = stub.openDocument(draft);
    doc.type("first line\nsecond line\nmy unsaved note\n");
    await autoEdit(t);
    await t.controller.send("please sign the draft");
    assert.equal(toolOf(t, "draft.txt")?.status, "completed", JSON.stringify(toolOf(t, "draft.txt")));
    assert.equal(doc.getText(), "first line, signed by bridle\nsecond line\nmy unsaved note\n");
    assert.equal(doc.isDirty, true);
    assert.equal(readFileSync(draft, "utf8"), "first line\nsecond line\n", "the disk is untouched");
    doc.undo();
    assert.equal(doc.getText(), "first line\nsecond line\nmy unsaved note\n");

    await t.controller.send("please sign the closed file");
    assert.equal(toolOf(t, "closed.txt")?.status, "completed", JSON.stringify(toolOf(t, "closed.txt")));
    assert.equal(readFileSync(closed, "utf8"), "closed, signed by bridle\n");
    assert.equal(stub.findDocument(closed)?.isDirty, false);
  } finally {
    deactivate(t);
  }
});

test("an edit VS Code refuses fails the tool with the editor's reason; the disk is untouched", async () => {
  const t = activate();
  try {
    openView();
    writeFileSync(join(t.ws, "closed.txt"), "closed\n");
    stub.answers.applyEdit = () => false;
    await autoEdit(t);
    await t.controller.send("please sign the closed file");
    const tool = toolOf(t, "closed.txt");
    assert.equal(tool?.status, "failed");
    assert.match(tool.output, /refused the edit to .*closed\.txt/);
    assert.equal(readFileSync(join(t.ws, "closed.txt"), "utf8"), "closed\n");
  } finally {
    deactivate(t);
  }
});

test("bridle.editorBuffers off: bridle reads the disk; turning it back on restarts bridle with buffers", async () => {
  const t = activate({ settings: { "bridle.editorBuffers": false } });
  try {
    openView();
    writeFileSync(join(t.ws, "draft.txt"), "first line\n");
    stub.openDocument(join(t.ws, "draft.txt")).type("first line\nmy unsaved note\n");
    await autoEdit(t);
    await t.controller.send("please read the draft");
    let tool = toolOf(t, "draft.txt");
    assert.equal(tool?.status, "completed");
    assert.doesNotMatch(tool.output, /my unsaved note|editor's buffer/);
    const pid = t.controller.agentPid();
    stub.configure({ "bridle.editorBuffers": true });
    await until(() => t.controller.agentPid() !== pid, 10000, "bridle to stop after the setting changed");
    await t.controller.send("please read the draft once more");
    tool = toolOf(t, "draft.txt");
    assert.match(tool.output, /my unsaved note/);
  } finally {
    deactivate(t);
  }
});

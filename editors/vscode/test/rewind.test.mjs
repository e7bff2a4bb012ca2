// "Rewind to here": the transcript's user messages numbered with bridle's
// prompts (_bridle/prompts), the confirmation built from
// _bridle/rewind_preview, and /rewind N through the real bridle putting the
// files back, with the rewound turns marked in the transcript (and again
// after session/load). The same in a real workbench: e2e/run.mjs.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { ext, stub, activate, openView, deactivate, until } from "./helpers.mjs";

after(() => ext.deactivate());

/** A reader of the test workspace's files: their text, or "<none>" when missing. */
const wsFile = (t) => (n) => (existsSync(join(t.ws, n)) ? readFileSync(join(t.ws, n), "utf8") : "<none>");

test("numberPrompts matches user messages to prompts by order and text, skipping what is no prompt", () => {
  const long = "x".repeat(100);
  const items = [
    { kind: "user", id: "u1", text: "start the recipe" },
    { kind: "agent", id: "a1", text: "ok" },
    { kind: "user", id: "c", text: "/constraint keep it short" },
    { kind: "user", id: "u2", text: `${long}\nsecond line` },
    { kind: "tool", id: "t2", toolCallId: "c2", title: "Write", toolKind: "edit", status: "completed", diffs: [], locations: [] },
    { kind: "user", id: "r", text: "/rewind 2" },
    { kind: "agent", id: "a3", text: "Rewound to before prompt 2: put back a.txt" },
    { kind: "user", id: "u3", text: "start the recipe" },
  ];
  const prompts = [
    { n: 1, text: "start the recipe", files: [] },
    { n: 2, text: "x".repeat(77) + "...", rewound: true, files: ["/w/a.txt"] },
    { n: 3, text: "start the recipe", files: [] },
  ];
  const changed = ext.numberPrompts(items, prompts);
  const byId = Object.fromEntries(items.map((i) => [i.id, i]));
  assert.deepEqual(["u1", "c", "u2", "r", "u3"].map((id) => byId[id].prompt), [1, undefined, 2, undefined, 3]);
  assert.deepEqual(items.filter((i) => i.rewound).map((i) => i.id), ["u2", "t2"]);
  assert.deepEqual(changed.map((i) => i.id).sort(), ["t2", "u1", "u2", "u3"]);
  // Nothing changes the second time.
  assert.deepEqual(ext.numberPrompts(items, prompts), []);
  // On replay the rewind's report follows the rewound turn directly: it is not rewound itself.
  const replay = [items[3], items[4], items[6]].map((i) => ({ ...i }));
  ext.numberPrompts(replay, prompts.slice(1, 2).map((p) => ({ ...p })));
  assert.deepEqual(replay.map((i) => !!i.rewound), [true, true, false]);
});

test("the confirmation lists the files to put back, to remove, and those the user changed", () => {
  const { message, detail } = ext.rewindConfirmation(
    {
      prompt: 2,
      restore: [
        { path: "/w/recipe.txt", from: "aa", to: "bb" },
        { path: "/w/shopping.txt", from: "cc" },
      ],
      yours: ["/w/notes.txt"],
      kept: ["/w/x.bin (cannot be read: denied)"],
    },
    "improve the recipe",
    "/w",
  );
  assert.equal(message, 'Rewind to before prompt 2: "improve the recipe"?');
  assert.match(detail, /Put back as they were:\n  • recipe\.txt/);
  assert.match(detail, /Remove \(the agent created them\):\n  • shopping\.txt/);
  assert.match(detail, /bridle will ask before putting them back\):\n  • notes\.txt/);
  assert.match(detail, /Cannot be put back:\n  • \/w\/x\.bin \(cannot be read: denied\)/);
  assert.match(ext.rewindConfirmation({ prompt: 1, restore: [], yours: [], kept: [] }, "hi", "/w").detail, /No files to put back\./);
});

// The editor's buffers (bridle.editorBuffers, on by default) make bridle
// read and write the files through the editor (ACP fs) while it answers
// _bridle/rewind_preview and runs /rewind; off, it uses the disk. Both are
// covered.
async function twoPrompts({ buffers = true } = {}) {
  const t = activate({ settings: buffers ? {} : { "bridle.editorBuffers": false } });
  const view = openView();
  await t.controller.newChat();
  await t.controller.setMode("auto-edit");
  await t.controller.send("please start the recipe");
  await t.controller.send("now improve the recipe");
  const file = wsFile(t);
  assert.equal(file("recipe.txt"), "flour\nsugar\n");
  assert.equal(file("shopping.txt"), "sugar\n");
  const users = t.controller.items().filter((i) => i.kind === "user");
  assert.deepEqual(users.map((u) => u.prompt), [1, 2]);
  // The view got the numbers: its messages offer "Rewind to here".
  await view.waitFor((m) => m.type === "item" && m.item.id === users[1].id && m.item.prompt === 2, 5000, "prompt 2's number in the view");
  return { t, view, users, file };
}

/** The rewind confirmation shown since calls[mark], once it is there. */
const confirmation = (mark = 0, ms = 5000) =>
  until(() => stub.calls.slice(mark).find((c) => c.kind === "warning" && c.text.startsWith("Rewind to before")), ms, "the rewind's confirmation");

for (const buffers of [true, false]) {
  test(`Rewind to here shows bridle's preview, does nothing on Cancel, and on Rewind puts the files back and marks the turn rewound (editor buffers ${buffers ? "on" : "off"})`, async () => {
    const { t, view, users, file } = await twoPrompts({ buffers });
    try {
      const recipe = join(t.ws, "recipe.txt");
      // With buffers on, bridle's edits went through the editor: recipe.txt has a document.
      if (buffers) assert.equal(stub.findDocument(recipe)?.getText(), "flour\nsugar\n");
      let answer;
      stub.answers.message = (kind, text) => (text.startsWith("Rewind to before") ? answer : undefined);
      answer = undefined; // Cancel
      // bridle reads the files for its preview through the editor while
      // the extension waits for the answer: a few seconds at most (a
      // bridle that answered on its read loop made each read time out
      // after 10 s and called the files unreadable).
      const started = Date.now();
      const cancelled = t.controller.rewindTo(users[1].id);
      const modal = await confirmation(0, 5000);
      await cancelled;
      assert.ok(Date.now() - started < 5000, `the preview took ${Date.now() - started} ms`);
      assert.equal(modal.text, 'Rewind to before prompt 2: "now improve the recipe"?');
      assert.equal(modal.options.modal, true);
      assert.deepEqual(modal.items, ["Rewind"]);
      assert.match(modal.options.detail, /Put back as they were:\n  • recipe\.txt\n/);
      assert.match(modal.options.detail, /Remove \(the agent created them\):\n  • shopping\.txt$/);
      assert.doesNotMatch(modal.options.detail, /Cannot be put back|cannot be read|Changed by you/);
      assert.equal(file("recipe.txt"), "flour\nsugar\n");
      assert.ok(!t.controller.items().some((i) => i.rewound));

      answer = "Rewind";
      const mark = stub.calls.length;
      view.send({ type: "rewind", itemId: users[1].id });
      await until(() => t.controller.items().some((i) => i.kind === "agent" && /^Rewound to before prompt 2/.test(i.text)) && !t.controller.running, 5000, "the rewind's report");
      assert.ok(stub.calls.slice(mark).some((c) => c.kind === "warning" && c.text.startsWith("Rewind to before")), "confirmed again");
      assert.equal(file("recipe.txt"), "flour\n");
      assert.equal(file("shopping.txt"), "<none>");
      const report = t.controller.items().find((i) => i.kind === "agent" && /^Rewound to before prompt 2/.test(i.text));
      assert.doesNotMatch(report.text, /cannot|not put back/i);
      if (buffers) {
        // Put back through the editor: one edit of recipe.txt's document, saved.
        const doc = stub.findDocument(recipe);
        assert.equal(doc.getText(), "flour\n");
        assert.equal(doc.isDirty, false);
        assert.ok(stub.calls.slice(mark).some((c) => c.kind === "applyEdit" && c.edit.edits.some((e) => e.uri.fsPath === recipe && e.newText === "flour\n")), "the rewind edited recipe.txt's document");
        assert.ok(stub.calls.slice(mark).some((c) => c.kind === "save" && c.path === recipe), "and saved it");
      } else {
        assert.ok(!stub.calls.some((c) => c.kind === "applyEdit"), "buffers off: no document is edited");
      }
      await until(() => t.controller.items().some((i) => i.rewound), 5000, "the rewound marks");
      const items = t.controller.items();
      const rewound = items.filter((i) => i.rewound).map((i) => (i.kind === "user" || i.kind === "agent" ? i.text : i.kind));
      assert.deepEqual(rewound, ["now improve the recipe", "tool", "tool", "The recipe is improved."]);
      assert.equal(items.find((i) => i.kind === "user" && i.text === "/rewind 2").prompt, undefined);
      assert.ok(!items.find((i) => i.id === users[0].id).rewound);

      // Reopened, the replay marks the same turn rewound.
      const id = t.controller.sessionId;
      assert.ok(await t.controller.resumeSession(id));
      const again = t.controller.items();
      assert.deepEqual(again.filter((i) => i.kind === "user" && i.prompt).map((i) => [i.text, i.prompt, !!i.rewound]), [
        ["please start the recipe", 1, false],
        ["now improve the recipe", 2, true],
      ]);
      const replayed = again.find((i) => i.kind === "agent" && /^Rewound to before prompt 2/.test(i.text));
      assert.ok(replayed && !replayed.rewound, "the rewind's report is not dimmed");
    } finally {
      deactivate(t);
    }
  });
}

test("a file the user changed after the agent, unsaved in its editor, is listed as theirs, and the rewind's question is answered in the chat", async () => {
  const { t, view, users, file } = await twoPrompts();
  try {
    // The user's change is in the editor only: bridle sees it through the buffer.
    const recipe = join(t.ws, "recipe.txt");
    const doc = stub.openDocument(recipe);
    doc.type("flour\nsugar\nmy salt\n");
    stub.answers.message = (kind, text) => (text.startsWith("Rewind to before") ? "Rewind" : undefined);
    const mark = view.posted.length;
    const done = t.controller.rewindTo(users[1].id);
    const modal = await confirmation(0, 5000);
    assert.match(modal.options.detail, /Changed by you since the agent \(bridle will ask before putting them back\):\n  • recipe\.txt/);
    assert.match(modal.options.detail, /Remove \(the agent created them\):\n  • shopping\.txt/);
    assert.doesNotMatch(modal.options.detail, /Put back as they were|Cannot be put back/);
    const ask = await view.waitFor((m) => m.type === "item" && m.item.kind === "permission" && !m.item.answer, 5000, "bridle's question", mark);
    assert.deepEqual(ask.item.options.map((o) => [o.kind, o.name]), [["allow_once", "Put them back too"], ["reject_once", "Leave them as they are"]]);
    view.send({ type: "answer", itemId: ask.item.id, optionId: ask.item.options[1].optionId });
    await done;
    assert.equal(doc.getText(), "flour\nsugar\nmy salt\n");
    assert.equal(doc.isDirty, true, "the user's change is left unsaved");
    assert.equal(file("recipe.txt"), "flour\nsugar\n");
    assert.equal(file("shopping.txt"), "<none>");
  } finally {
    deactivate(t);
  }
});

test("a rewind puts back what a command changed: the file it deleted returns, the one it created goes", async () => {
  const t = activate();
  try {
    openView();
    const file = wsFile(t);
    await t.controller.newChat();
    // full-auto runs the command without asking.
    await t.controller.setMode("full-auto");
    await t.controller.send("please tidy the pantry");
    assert.ok(t.controller.items().some((i) => i.kind === "agent" && i.text === "The pantry is tidy."));
    assert.equal(file("notes.txt"), "<none>");
    assert.equal(file("pantry.txt"), "jar\n");
    const user = t.controller.items().find((i) => i.kind === "user" && i.text === "please tidy the pantry");
    await until(() => user.prompt === 1 || t.controller.items().find((i) => i.id === user.id)?.prompt === 1, 5000, "the prompt's number");
    stub.answers.message = (kind, text) => (text.startsWith("Rewind to before") ? "Rewind" : undefined);
    await t.controller.rewindTo(user.id);
    const modal = stub.calls.find((c) => c.kind === "warning" && c.text.startsWith("Rewind to before"));
    assert.ok(modal, "the rewind's confirmation");
    assert.equal(modal.text, 'Rewind to before prompt 1: "please tidy the pantry"?');
    assert.match(modal.options.detail, /Put back as they were:\n  • notes\.txt\n/);
    assert.match(modal.options.detail, /Remove \(the agent created them\):\n  • pantry\.txt$/);
    assert.doesNotMatch(modal.options.detail, /Cannot be put back|Changed by you/);
    await until(() => t.controller.items().some((i) => i.kind === "agent" && /^Rewound to before prompt 1/.test(i.text)) && !t.controller.running, 5000, "the rewind's report");
    assert.equal(file("notes.txt"), "hello\n");
    assert.equal(file("pantry.txt"), "<none>");
  } finally {
    deactivate(t);
  }
});

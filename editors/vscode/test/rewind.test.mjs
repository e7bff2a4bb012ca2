// "Rewind to here": the transcript's user messages numbered with bridle's
// prompts (_bridle/prompts), the confirmation built from
// _bridle/rewind_preview, and /rewind N through the real bridle putting the
// files back, with the rewound turns marked in the transcript (and again
// after session/load). The same in a real workbench: e2e/run.mjs.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { ext, stub, activate, openView, deactivate, until } from "./helpers.mjs";

after(() => ext.deactivate());

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

// bridle answers _bridle/rewind_preview on its request loop, so when the
// editor's buffers are offered (ACP fs) its reads of the files through
// the editor cannot be answered until they time out, and the preview
// lists every file as unreadable. Until bridle answers it asynchronously,
// these tests run on the files on disk.
async function twoPrompts() {
  const t = activate({ settings: { "bridle.editorBuffers": false } });
  const view = openView();
  await t.controller.newChat();
  await t.controller.setMode("auto-edit");
  await t.controller.send("please start the recipe");
  await t.controller.send("now improve the recipe");
  const file = (n) => (existsSync(join(t.ws, n)) ? readFileSync(join(t.ws, n), "utf8") : "<none>");
  assert.equal(file("recipe.txt"), "flour\nsugar\n");
  assert.equal(file("shopping.txt"), "sugar\n");
  const users = t.controller.items().filter((i) => i.kind === "user");
  assert.deepEqual(users.map((u) => u.prompt), [1, 2]);
  // The view got the numbers: its messages offer "Rewind to here".
  await view.waitFor((m) => m.type === "item" && m.item.id === users[1].id && m.item.prompt === 2, 5000, "prompt 2's number in the view");
  return { t, view, users, file };
}

test("Rewind to here shows bridle's preview, does nothing on Cancel, and on Rewind puts the files back and marks the turn rewound", async () => {
  const { t, view, users, file } = await twoPrompts();
  try {
    const asked = [];
    let answer;
    stub.answers.message = (kind, text, items) => {
      asked.push({ kind, text, items });
      return text.startsWith("Rewind to before") ? answer : undefined;
    };
    answer = undefined; // Cancel
    await t.controller.rewindTo(users[1].id);
    const modal = stub.calls.find((c) => c.kind === "warning" && c.text.startsWith("Rewind to before"));
    assert.equal(modal.text, 'Rewind to before prompt 2: "now improve the recipe"?');
    assert.equal(modal.options.modal, true);
    assert.deepEqual(modal.items, ["Rewind"]);
    assert.match(modal.options.detail, /Put back as they were:\n  • recipe\.txt/);
    assert.match(modal.options.detail, /Remove \(the agent created them\):\n  • shopping\.txt/);
    assert.equal(file("recipe.txt"), "flour\nsugar\n");
    assert.ok(!t.controller.items().some((i) => i.rewound));

    answer = "Rewind";
    view.send({ type: "rewind", itemId: users[1].id });
    await until(() => t.controller.items().some((i) => i.kind === "agent" && /^Rewound to before prompt 2/.test(i.text)) && !t.controller.running, 15000, "the rewind's report");
    assert.equal(file("recipe.txt"), "flour\n");
    assert.equal(file("shopping.txt"), "<none>");
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
    const report = again.find((i) => i.kind === "agent" && /^Rewound to before prompt 2/.test(i.text));
    assert.ok(report && !report.rewound, "the rewind's report is not dimmed");
  } finally {
    deactivate(t);
  }
});

test("a file the user changed after the agent is listed as theirs, and the rewind's question is answered in the chat", async () => {
  const { t, view, users, file } = await twoPrompts();
  try {
    writeFileSync(join(t.ws, "recipe.txt"), "flour\nsugar\nmy salt\n");
    stub.answers.message = (kind, text) => (text.startsWith("Rewind to before") ? "Rewind" : undefined);
    const mark = view.posted.length;
    const done = t.controller.rewindTo(users[1].id);
    const modal = await until(() => stub.calls.find((c) => c.kind === "warning" && c.text.startsWith("Rewind to before")), 10000, "the confirmation");
    assert.match(modal.options.detail, /Changed by you since the agent \(bridle will ask before putting them back\):\n  • recipe\.txt/);
    assert.match(modal.options.detail, /Remove \(the agent created them\):\n  • shopping\.txt/);
    const ask = await view.waitFor((m) => m.type === "item" && m.item.kind === "permission" && !m.item.answer, 15000, "bridle's question", mark);
    assert.deepEqual(ask.item.options.map((o) => [o.kind, o.name]), [["allow_once", "Put them back too"], ["reject_once", "Leave them as they are"]]);
    view.send({ type: "answer", itemId: ask.item.id, optionId: ask.item.options[1].optionId });
    await done;
    assert.equal(file("recipe.txt"), "flour\nsugar\nmy salt\n");
    assert.equal(file("shopping.txt"), "<none>");
  } finally {
    deactivate(t);
  }
});

// The approval UI against the ACP schema: a session/request_permission as
// bridle sends it (validated with the official SDK's schema), answered inline,
// by notification, or cancelled by Stop. The end-to-end approval through a
// real edit tool is in e2e/run.mjs and edit.test.mjs.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { stub, ext, extRoot, activate, openView, deactivate, until } from "./helpers.mjs";

const zod = await import(pathToFileURL(join(extRoot, "node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js")).href);

after(() => ext.deactivate());

/** A request shaped like bridle's (session/tools.go): four options, a diff. */
function request(sessionId, path) {
  const req = {
    sessionId,
    toolCall: {
      toolCallId: "call-7-0",
      title: "Write notes.txt",
      kind: "edit",
      status: "pending",
      rawInput: { path: "notes.txt", content: "edited\n" },
      content: [{ type: "diff", path, oldText: "hello\n", newText: "edited\n" }],
    },
    options: [
      { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
      { optionId: "allow_always", name: "Allow write_file for this session", kind: "allow_always" },
      { optionId: "reject_once", name: "Reject", kind: "reject_once" },
      { optionId: "reject_always", name: "Reject write_file for this session", kind: "reject_always" },
    ],
  };
  zod.zRequestPermissionRequest.parse(req);
  return req;
}

async function setup() {
  const t = activate();
  const view = openView();
  await t.controller.newChat();
  return { t, view, req: request(t.controller.sessionId, join(t.ws, "notes.txt")) };
}

test("an approval shows inline and as a notification with ACP's exact options; the inline answer wins", async () => {
  const { t, view, req } = await setup();
  try {
    let answerToast;
    stub.answers.message = (kind, text, items) => new Promise((r) => (answerToast = () => r(items[2])));
    const answered = t.controller.permission(req, new AbortController().signal);

    const post = await view.waitFor((m) => m.type === "item" && m.item.kind === "permission", 2000, "the inline card");
    assert.deepEqual(post.item.options, req.options);
    assert.equal(post.item.title, "Write notes.txt");
    assert.equal(post.item.answer, undefined);
    assert.equal(post.item.diffs[0].newText, "edited\n");

    const toast = stub.calls.find((c) => c.kind === "info");
    assert.equal(toast.text, "bridle asks: Write notes.txt");
    assert.deepEqual(toast.items, req.options.map((o) => o.name));

    // The proposed edit opens in the native diff editor, old on the left.
    const diff = await until(() => stub.calls.find((c) => c.kind === "command" && c.id === "vscode.diff"), 2000, "vscode.diff");
    const [left, right, title] = diff.args;
    const provider = stub.registry.providers.get("bridle-diff");
    assert.equal(provider.provideTextDocumentContent(left), "hello\n");
    assert.equal(provider.provideTextDocumentContent(right), "edited\n");
    assert.equal(title, "notes.txt ↔ bridle's edit");

    view.send({ type: "answer", itemId: post.item.id, optionId: "allow_always" });
    const resp = await answered;
    assert.deepEqual(resp, { outcome: { outcome: "selected", optionId: "allow_always" } });
    zod.zRequestPermissionResponse.parse(resp);
    const done = await view.waitFor((m) => m.type === "item" && m.item.id === post.item.id && m.item.answer, 2000, "the answered card");
    assert.equal(done.item.answer, "allow_always");
    // A late click on the notification changes nothing.
    answerToast();
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(t.controller.items().find((i) => i.id === post.item.id).answer, "allow_always");
    assert.deepEqual(t.controller.pendingApprovals(), []);
  } finally {
    deactivate(t);
  }
});

test("the notification's button answers an approval", async () => {
  const { t, req } = await setup();
  try {
    stub.settings["bridle.openDiffOnApproval"] = false;
    stub.answers.message = (kind, text, items) => (kind === "info" && text.startsWith("bridle asks") ? "Reject" : undefined);
    const resp = await t.controller.permission(req, new AbortController().signal);
    assert.deepEqual(resp, { outcome: { outcome: "selected", optionId: "reject_once" } });
    assert.ok(!stub.calls.some((c) => c.kind === "command" && c.id === "vscode.diff"), "no diff editor when the setting is off");
    assert.equal(t.controller.items().find((i) => i.kind === "permission").answer, "reject_once");
  } finally {
    deactivate(t);
  }
});

test("Stop answers pending approvals as cancelled, as ACP requires", async () => {
  const { t, view, req } = await setup();
  try {
    const answered = t.controller.permission(req, new AbortController().signal);
    await view.waitFor((m) => m.type === "item" && m.item.kind === "permission", 2000, "the inline card");
    await stub.registry.commands.get("bridle.stop")();
    const resp = await answered;
    assert.deepEqual(resp, { outcome: { outcome: "cancelled" } });
    zod.zRequestPermissionResponse.parse(resp);
    const card = await view.waitFor((m) => m.type === "item" && m.item.kind === "permission" && m.item.answer, 2000, "the cancelled card");
    assert.equal(card.item.answer, "cancelled");
  } finally {
    deactivate(t);
  }
});

test("an approval the agent withdraws ($/cancel_request) resolves as cancelled", async () => {
  const { t, req } = await setup();
  try {
    const ac = new AbortController();
    const answered = t.controller.permission(req, ac.signal);
    ac.abort();
    assert.deepEqual(await answered, { outcome: { outcome: "cancelled" } });
  } finally {
    deactivate(t);
  }
});

test("a command's approval carries its command line, inline and in the notification", async () => {
  const t = activate();
  try {
    const view = openView();
    await t.controller.newChat();
    const mark = view.posted.length;
    const turn = t.controller.send("please list the files");
    const post = await view.waitFor((m) => m.type === "item" && m.item.kind === "permission", 15000, "the approval", mark);
    assert.equal(post.item.title, "List the files");
    assert.equal(post.item.command, "ls -1");
    const toast = await until(() => stub.calls.find((c) => c.kind === "info" && c.text.startsWith("bridle asks")), 2000, "the notification");
    assert.equal(toast.text, "bridle asks: List the files ($ ls -1)");
    view.send({ type: "answer", itemId: post.item.id, optionId: "reject_once" });
    await turn;
    const tool = t.controller.items().find((i) => i.kind === "tool");
    assert.equal(tool.command, "ls -1");
  } finally {
    deactivate(t);
  }
});

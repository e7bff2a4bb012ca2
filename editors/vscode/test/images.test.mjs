// Images in prompts: the rules the view and the host share, and prompts with
// images through the real bridle (scripted models that do and do not read
// images), their replay on session/load, and a refusal.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { ext, stub, activate, openView, reactivate, deactivate, agentText, lastState, until } from "./helpers.mjs";
import { png, gif } from "./png.mjs";

after(() => ext.deactivate());

const red = png(24, 16, [220, 30, 30]);
const redImage = { mimeType: "image/png", data: red.toString("base64"), name: "red.png" };

test("checkImage takes PNG, JPEG, GIF and WebP up to 5 MB and says why it refuses the rest", () => {
  for (const type of ["image/png", "image/jpeg", "image/gif", "image/webp"]) {
    assert.equal(ext.checkImage({ name: "a", type, size: 1000 }), undefined, type);
  }
  assert.equal(ext.checkImage({ name: "big.png", type: "image/png", size: ext.maxImageBytes }), undefined);
  assert.match(ext.checkImage({ name: "big.png", type: "image/png", size: ext.maxImageBytes + 1 }), /"big\.png" is 5\.01 MB, over bridle's limit of 5 MB/);
  assert.match(ext.checkImage({ name: "notes.txt", type: "text/plain", size: 10 }), /"notes\.txt" cannot be attached: text\/plain is not an image bridle takes \(PNG, JPEG, GIF or WebP\)/);
  assert.match(ext.checkImage({ name: "x.svg", type: "image/svg+xml", size: 10 }), /image\/svg\+xml is not an image bridle takes/);
  assert.match(ext.checkImage({ name: "", type: "", size: 10 }), /The pasted item cannot be attached: its type is not/);
  assert.match(ext.checkImage({ name: "e.png", type: "image/png", size: 0 }), /empty/);
  // The host checks what the view posts by its decoded size.
  assert.equal(ext.checkPromptImage(redImage), undefined);
  const huge = "A".repeat(Math.ceil(((5 << 20) + 10) / 3) * 4);
  assert.match(ext.checkPromptImage({ mimeType: "image/png", data: huge }), /over bridle's limit/);
});

test("promptBlocks puts the text first, then each image as an ACP image block", () => {
  assert.deepEqual(ext.promptBlocks("look", [redImage, { mimeType: "image/gif", data: "R0lG" }]), [
    { type: "text", text: "look" },
    { type: "image", mimeType: "image/png", data: redImage.data },
    { type: "image", mimeType: "image/gif", data: "R0lG" },
  ]);
  assert.deepEqual(ext.promptBlocks("only text"), [{ type: "text", text: "only text" }]);
  assert.deepEqual(ext.promptBlocks("", [redImage]), [{ type: "image", mimeType: "image/png", data: redImage.data }]);
});

test("dropImagePlaceholder takes out the line that names a replayed image, once", () => {
  assert.equal(ext.dropImagePlaceholder("look\n[image image/png]", "image/png"), "look");
  assert.equal(ext.dropImagePlaceholder("look\n[image image/png]\n[image image/png]", "image/png"), "look\n[image image/png]");
  assert.equal(ext.dropImagePlaceholder("[image image/gif]", "image/gif"), "");
  assert.equal(ext.dropImagePlaceholder("[image image/gif]\nafter", "image/gif"), "after");
  assert.equal(ext.dropImagePlaceholder("look\n[image image/png]", "image/gif"), "look\n[image image/png]");
  assert.equal(ext.dropImagePlaceholder("say [image image/png] inline", "image/png"), "say [image image/png] inline");
});

test("a prompt with images reaches bridle, shows with the prompt, and session/load replays it", async () => {
  let t = activate();
  try {
    const view = openView();
    view.send({ type: "ready" });
    await until(() => t.controller.sessionId, 10000, "a session");
    // The view offers images because bridle's initialize says it takes them.
    assert.equal(lastState(view).images, true);
    const gifImage = { mimeType: "image/gif", data: gif.toString("base64"), name: "dot.gif" };
    const mark = view.posted.length;
    view.send({ type: "send", text: "what is in this picture?", images: [redImage, gifImage] });
    const busy = view.posted.indexOf(await view.waitFor((m) => m.type === "state" && m.running === true, 5000, "running state", mark));
    await view.waitFor((m) => m.type === "state" && m.running === false, 10000, "the turn to end", busy);
    const items = t.controller.items();
    assert.equal(agentText(items), "A small red square.");
    const user = items.find((i) => i.kind === "user");
    assert.equal(user.text, "what is in this picture?");
    assert.deepEqual(user.images.map((i) => [i.mimeType, i.name]), [["image/png", "red.png"], ["image/gif", "dot.gif"]]);
    assert.equal(user.images[0].data, redImage.data);
    // bridle stored each image by its content next to its database.
    const stored = readdirSync(join(t.dir, "images")).sort();
    assert.equal(stored.length, 2);
    const bytes = stored.map((f) => readFileSync(join(t.dir, "images", f)));
    assert.ok(bytes.some((b) => b.equals(red)), "the PNG's bytes are stored as sent");
    assert.ok(!items.some((i) => i.kind === "notice"), JSON.stringify(items.filter((i) => i.kind === "notice")));

    // A reload reopens it: session/load replays the prompt with its images.
    const id = t.controller.sessionId;
    t = reactivate(t);
    assert.equal(await t.controller.resumeSession(id), true);
    const replayed = t.controller.items().filter((i) => i.kind === "user");
    assert.equal(replayed.length, 1, JSON.stringify(replayed.map((i) => i.text)));
    assert.equal(replayed[0].text, "what is in this picture?");
    assert.deepEqual(replayed[0].images.map((i) => i.mimeType), ["image/png", "image/gif"]);
    assert.equal(replayed[0].images[0].data, redImage.data);
    assert.equal(agentText(t.controller.items()), "A small red square.");
  } finally {
    deactivate(t);
  }
});

test("a model that takes no images: bridle's -32602 is shown, and the prompt goes back to the input", async () => {
  const t = activate({ scenario: "text-only" });
  try {
    const view = openView();
    view.send({ type: "ready" });
    await until(() => t.controller.sessionId, 10000, "a session");
    const mark = view.posted.length;
    view.send({ type: "send", text: "describe this", images: [redImage] });
    const draft = await view.waitFor((m) => m.type === "draft", 10000, "the prompt back in the input", mark);
    assert.equal(draft.text, "describe this");
    assert.deepEqual(draft.images.map((i) => i.name), ["red.png"]);
    const err = stub.calls.find((c) => c.kind === "error");
    assert.ok(err, "an error message is shown");
    assert.match(err.text, /^bridle did not take the prompt with its image: .*takes no images/);
    const items = t.controller.items();
    // The refused prompt is not part of the session.
    assert.equal(items.filter((i) => i.kind === "user").length, 0);
    const notice = items.find((i) => i.kind === "notice");
    assert.equal(notice.level, "error");
    assert.match(notice.text, /takes no images/);
    assert.ok(!existsSync(join(t.dir, "images")), "bridle stored nothing");
    await until(() => !t.controller.running, 5000, "the turn state to clear");
    // The same prompt without the image goes through.
    await t.controller.send("describe this");
    assert.equal(agentText(t.controller.items()), "I read text only.");
  } finally {
    deactivate(t);
  }
});

test("the host refuses an image of the wrong type without sending the prompt", async () => {
  const t = activate();
  try {
    openView();
    await t.controller.newChat();
    await t.controller.send("look", [{ mimeType: "image/svg+xml", data: "PHN2Zz4=", name: "x.svg" }]);
    const err = stub.calls.find((c) => c.kind === "error");
    assert.match(err?.text ?? "", /"x\.svg" cannot be attached: image\/svg\+xml is not an image bridle takes/);
    assert.equal(t.controller.items().filter((i) => i.kind === "user").length, 0);
    assert.ok(!existsSync(join(t.dir, "images")));
  } finally {
    deactivate(t);
  }
});

// A user's hook on a tool card: a PreToolUse hook refuses read_file, and
// the chat holds the hook's card (kind other, finished, titled with the
// event) with the hook's reason, as any tool card.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ext, activate, openView, deactivate, until } from "./helpers.mjs";

after(() => ext.deactivate());

const here = dirname(fileURLToPath(import.meta.url));

test("a hook that refuses a call shows as a card with its reason", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bridle-vscode-hooks-"));
  mkdirSync(join(dir, "config", "bridle"), { recursive: true });
  const hooks = { PreToolUse: [{ matcher: "read_file", command: "echo 'drafts are private here' >&2; exit 2" }] };
  writeFileSync(join(dir, "config", "bridle", "settings.json"), JSON.stringify({ hooks }));
  const t = activate({
    settings: {
      "bridle.env": {
        BRIDLE_DB: join(dir, "bridle.db"),
        BRIDLE_MODEL: `scripted/${join(here, "scenarios", "chat.json")}`,
        XDG_CONFIG_HOME: join(dir, "config"),
      },
    },
  });
  try {
    writeFileSync(join(t.ws, "draft.txt"), "a draft\n");
    openView();
    await t.controller.newChat();
    await t.controller.send("read the draft");
    const card = await until(
      () => t.controller.items().find((i) => i.kind === "tool" && i.toolKind === "other" && /PreToolUse/.test(i.title)),
      15000,
      "the hook's card",
    );
    await until(() => card.status === "completed" || card.status === "failed", 15000, "the hook's card finished");
    assert.match(card.output, /drafts are private here/, JSON.stringify(card));
  } finally {
    deactivate(t);
  }
});

// A language server's answer on a tool card, as any result: bridle runs
// the pinned gopls (.tools/bin, installed by make test) for a Go
// workspace; the scripted model calls the diagnostics tool (it reads: no
// approval), and the card's output is what gopls said.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ext, activate, openView, deactivate, until } from "./helpers.mjs";

after(() => ext.deactivate());

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..", "..");

test("a diagnostics tool card shows what gopls said", async () => {
  const gopls = join(repo, ".tools", "bin");
  assert.ok(existsSync(join(gopls, "gopls")), `gopls is not in ${gopls}: run make tools (scripts/ensure-test-tools)`);
  const goBin = dirname(execFileSync("sh", ["-c", "command -v go"], { encoding: "utf8" }).trim());
  const dir = mkdtempSync(join(tmpdir(), "bridle-vscode-lsp-"));
  mkdirSync(join(dir, "config", "bridle"), { recursive: true });
  writeFileSync(join(dir, "config", "bridle", "settings.json"), '{"lsp": {"wait_seconds": 120}}\n');
  const t = activate({
    settings: {
      "bridle.env": {
        BRIDLE_DB: join(dir, "bridle.db"),
        BRIDLE_MODEL: `scripted/${join(here, "scenarios", "lsp.json")}`,
        PATH: `${gopls}:${goBin}:/usr/bin:/bin`,
        XDG_CONFIG_HOME: join(dir, "config"),
        XDG_CACHE_HOME: join(dir, "cache"),
      },
    },
  });
  try {
    writeFileSync(join(t.ws, "go.mod"), "module example.com/demo\n\ngo 1.22\n");
    writeFileSync(join(t.ws, "main.go"), "package main\n\nfunc main() {}\n");
    writeFileSync(join(t.ws, "other.go"), 'package main\n\nvar alreadyBroken int = "not a number"\n');
    openView();
    await t.controller.newChat();
    await t.controller.send("list the problems");
    const tool = await until(
      () => t.controller.items().find((i) => i.kind === "tool" && (i.status === "completed" || i.status === "failed")),
      120000,
      "the tool card",
    );
    assert.equal(tool.status, "completed", tool.output);
    assert.match(
      tool.output,
      /other\.go:3:25 error cannot use "not a number" \(untyped string constant\) as int value in variable declaration/,
    );
  } finally {
    deactivate(t);
  }
});

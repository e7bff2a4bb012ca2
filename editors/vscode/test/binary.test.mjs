// Which bridle the extension runs (the bridle.path setting, then the
// binary bundled in a platform .vsix, then PATH) and the warning when its
// version is not the extension's. Real bridle, stand-in vscode module.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, copyFileSync, chmodSync, statSync, symlinkSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { stub, ext, extRoot, activate, deactivate, until, bridleBin } from "./helpers.mjs";

after(() => ext.deactivate());

const pkg = JSON.parse(readFileSync(join(extRoot, "package.json"), "utf8"));
const bridleVersion = execFileSync(bridleBin, ["--version"]).toString().split(" ")[1];

/** An installed extension as a .vsix unpacks it: package.json and, if asked, bin/bridle with the given mode. */
function installed({ version = pkg.version, bundled = true, mode = 0o755 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "bridle-ext-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ ...pkg, version }));
  if (bundled) {
    mkdirSync(join(dir, "bin"));
    copyFileSync(bridleBin, join(dir, "bin", "bridle"));
    chmodSync(join(dir, "bin", "bridle"), mode);
  }
  return dir;
}

const warnings = () => stub.calls.filter((c) => c.kind === "warning");

test("package.json leaves bridle.path empty, so the bundled binary is the default", () => {
  assert.equal(pkg.contributes.configuration.properties["bridle.path"].default, "");
});

test("with bridle.path empty the bundled binary runs, made executable if the install lost its mode", async () => {
  const dir = installed({ mode: 0o644 });
  const t = activate({ extensionPath: dir, settings: { "bridle.path": "" } });
  try {
    const l = t.controller.launch();
    assert.equal(l.command, join(dir, "bin", "bridle"));
    assert.equal(l.binary.source, "bundled");
    assert.ok(statSync(l.command).mode & 0o100, "the bundled binary is executable again");
    await t.controller.newChat();
    assert.ok(t.controller.sessionId, "a session started on the bundled binary");
    assert.equal(stub.calls.filter((c) => c.kind === "error").length, 0, JSON.stringify(stub.calls));
    assert.deepEqual(warnings(), [], "the same version: no warning");
  } finally {
    deactivate(t);
  }
});

test("the bridle.path setting wins over the bundled binary", () => {
  const dir = installed();
  const t = activate({ extensionPath: dir, settings: { "bridle.path": bridleBin } });
  try {
    const l = t.controller.launch();
    assert.equal(l.command, bridleBin);
    assert.equal(l.binary.source, "setting");
  } finally {
    deactivate(t);
  }
});

test("with no setting and nothing bundled, bridle comes from PATH", async () => {
  const dir = installed({ bundled: false });
  const bin = mkdtempSync(join(tmpdir(), "bridle-path-"));
  symlinkSync(bridleBin, join(bin, "bridle"));
  const t = activate({ extensionPath: dir, settings: { "bridle.path": "" } });
  try {
    stub.settings["bridle.env"] = { ...stub.settings["bridle.env"], PATH: `${bin}:${process.env.PATH}` };
    const l = t.controller.launch();
    assert.equal(l.command, "bridle");
    assert.equal(l.binary.source, "path");
    await t.controller.newChat();
    assert.ok(t.controller.sessionId, "a session started on bridle from PATH");
  } finally {
    deactivate(t);
  }
});

test("a bridle of another version gets a warning naming both versions and the fix", async () => {
  const dir = installed({ version: "9.9.9" });
  const t = activate({ extensionPath: dir, settings: { "bridle.path": bridleBin } });
  try {
    await t.controller.newChat();
    assert.ok(t.controller.sessionId, "the session still starts");
    const w = warnings();
    assert.equal(w.length, 1, JSON.stringify(stub.calls));
    assert.match(w[0].text, /extension 9\.9\.9/);
    assert.ok(w[0].text.includes(`bridle ${bridleVersion}`), w[0].text);
    assert.ok(w[0].text.includes(bridleBin), "names the binary");
    assert.match(w[0].text, /clear "bridle\.path" to use the bridle 9\.9\.9 bundled/);
    assert.deepEqual(w[0].items, ["Open Settings"]);
    // bridle restarted (it died): the same binary is not warned about twice.
    const pid = t.controller.agentPid();
    process.kill(pid, "SIGKILL");
    await until(() => !t.controller.sessionId, 5000, "the exit to be noticed");
    await t.controller.send("hello again");
    assert.notEqual(t.controller.agentPid(), pid, "a new process");
    assert.equal(warnings().length, 1);
  } finally {
    deactivate(t);
  }
});

// The Windows packages (win32-x64, win32-arm64) carry bin/bridle.exe
// (make vsix): on Windows the extension must look for that name, and only
// there. The resolution is the extension's own code, asked for each
// platform.
test("on Windows the bundled binary is bin/bridle.exe; elsewhere bin/bridle", () => {
  const both = installed();
  copyFileSync(bridleBin, join(both, "bin", "bridle.exe"));
  const exeOnly = installed({ bundled: false });
  mkdirSync(join(exeOnly, "bin"));
  copyFileSync(bridleBin, join(exeOnly, "bin", "bridle.exe"));
  const plainOnly = installed();
  for (const [platform, dir, want] of [
    ["win32", both, { command: join(both, "bin", "bridle.exe"), source: "bundled" }],
    ["win32", exeOnly, { command: join(exeOnly, "bin", "bridle.exe"), source: "bundled" }],
    ["win32", plainOnly, { command: "bridle", source: "path" }], // a Linux package on Windows: not run
    ["linux", exeOnly, { command: "bridle", source: "path" }], // a Windows package elsewhere: not run
    ["linux", both, { command: join(both, "bin", "bridle"), source: "bundled" }],
    ["darwin", plainOnly, { command: join(plainOnly, "bin", "bridle"), source: "bundled" }],
  ]) {
    assert.equal(ext.bundledPath(dir, platform), join(dir, "bin", platform === "win32" ? "bridle.exe" : "bridle"), platform);
    assert.deepEqual(ext.resolveBinary("", dir, () => {}, platform), want, `${platform}, ${dir}`);
  }
  // The setting still wins on Windows.
  assert.deepEqual(ext.resolveBinary("C:\\bridle\\bridle.exe", both, () => {}, "win32"), { command: "C:\\bridle\\bridle.exe", source: "setting" });
});

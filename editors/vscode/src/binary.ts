// Which bridle binary the extension runs, and whether its version matches
// the extension's. Nothing here knows about VS Code.

import * as fs from "node:fs";
import * as path from "node:path";

/** Where the binary came from: the setting, the package, or PATH. */
export type BinarySource = "setting" | "bundled" | "path";

export interface Binary {
  command: string;
  source: BinarySource;
}

/**
 * The binary a platform-specific .vsix carries (make vsix puts it there):
 * bin/bridle, or bin/bridle.exe on Windows, which runs only files named so.
 */
export function bundledPath(extensionPath: string, platform: NodeJS.Platform = process.platform): string {
  return path.join(extensionPath, "bin", platform === "win32" ? "bridle.exe" : "bridle");
}

/**
 * The order: the bridle.path setting when set (a developer's build, or a
 * system install the user chose), then the binary bundled in the
 * extension (the version built for it), then `bridle` on PATH (a
 * development install of the extension, which has no bundled binary).
 */
export function resolveBinary(
  setting: string | undefined,
  extensionPath: string,
  log: (line: string) => void = () => {},
  platform: NodeJS.Platform = process.platform,
): Binary {
  const configured = setting?.trim();
  if (configured) return { command: configured, source: "setting" };
  const bundled = bundledPath(extensionPath, platform);
  if (fs.existsSync(bundled)) {
    ensureExecutable(bundled, log, platform);
    return { command: bundled, source: "bundled" };
  }
  // Node finds bridle.exe on Windows' PATH from the plain name.
  return { command: "bridle", source: "path" };
}

/**
 * VS Code's unzip restores the mode the .vsix recorded (0755 for the
 * binary), but an installer that drops it (a copy, an older client) must
 * not leave bridle unusable: add the executable bits back.
 */
function ensureExecutable(file: string, log: (line: string) => void, platform: NodeJS.Platform): void {
  if (platform === "win32") return; // no executable bit: the .exe name is what counts
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    try {
      fs.chmodSync(file, fs.statSync(file).mode | 0o755);
      log(`made the bundled ${file} executable`);
    } catch (err) {
      log(`could not make the bundled ${file} executable: ${String(err)}`);
    }
  }
}

/**
 * The warning for a bridle whose version is not the extension's, naming
 * both and what to do; undefined when they match.
 */
export function versionWarning(bin: Binary, agentVersion: string | undefined, extensionVersion: string, hasBundled: boolean): string | undefined {
  const norm = (v: string | undefined) => (v ?? "").trim().replace(/^v/, "");
  if (norm(agentVersion) === norm(extensionVersion)) return undefined;
  const got = agentVersion ? `bridle ${agentVersion}` : "a bridle that does not report its version";
  const head = `The bridle extension ${extensionVersion} is running ${got}`;
  switch (bin.source) {
    case "setting":
      return (
        `${head} (the "bridle.path" setting: ${bin.command}). Update that binary to ${extensionVersion}, ` +
        (hasBundled
          ? `or clear "bridle.path" to use the bridle ${extensionVersion} bundled with the extension.`
          : `or install the extension's .vsix for your platform, which bundles bridle ${extensionVersion}.`)
      );
    case "bundled":
      return `${head}, bundled at ${bin.command}: the package is inconsistent. Reinstall the extension.`;
    case "path":
      return (
        `${head} (found on PATH). Install bridle ${extensionVersion}, or install the extension's .vsix for ` +
        `your platform, which bundles it, or set "bridle.path" to a bridle ${extensionVersion}.`
      );
  }
}

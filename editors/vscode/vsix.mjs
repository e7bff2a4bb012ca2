// Packages the extension as platform-specific .vsix files, each with the
// matching static bridle binary inside (bin/bridle, bin/bridle.exe for
// Windows). make vsix runs it:
//
//	node editors/vscode/vsix.mjs [--out DIR] [--targets linux-x64,win32-arm64,...|host]
//
// The binaries come from the release build (go run ./internal/dist, the
// same static, stamped, reproducible binaries as make dist; its archives,
// SHA256SUMS and agent.json land in DIR too). Each package is staged in a
// temporary folder (the files .vscodeignore allows, LICENSE and the
// binary) and packed by vsce with SOURCE_DATE_EPOCH set to the commit's
// date, so that the same commit gives the same bytes.

import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, chmodSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");

// VS Code's platform names and the release's (the ACP registry's).
const platforms = {
  "linux-x64": "linux-x86_64",
  "linux-arm64": "linux-aarch64",
  "darwin-x64": "darwin-x86_64",
  "darwin-arm64": "darwin-aarch64",
  "win32-x64": "windows-x86_64",
  "win32-arm64": "windows-aarch64",
};

function arg(name, def) {
  const i = process.argv.indexOf(name);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : def;
}
const out = resolve(arg("--out", join(repo, "dist")));
let targets = arg("--targets", Object.keys(platforms).join(",")).split(",").filter(Boolean);
targets = targets.map((t) => (t === "host" ? `${process.platform}-${process.arch}` : t));
for (const t of targets) {
  if (!platforms[t]) {
    console.error(`vsix: no bridle release for ${t}; the targets are ${Object.keys(platforms).join(", ")}`);
    process.exit(2);
  }
}
const vsce = join(here, "node_modules", ".bin", "vsce");
if (!existsSync(vsce)) {
  console.error("vsix: vsce is missing: run `npm ci` in editors/vscode (it is in devDependencies)");
  process.exit(1);
}

const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { stdio: ["ignore", "pipe", "inherit"], ...opts });

// 1. The static binaries, from the release build.
mkdirSync(out, { recursive: true });
const release = JSON.parse(
  run(process.env.GO || "go", ["run", "./internal/dist", "-out", out, "-json", "-keep-binaries", "-targets", targets.map((t) => platforms[t]).join(",")], { cwd: repo }).toString(),
);
const epoch = Math.floor(new Date(release.Date).getTime() / 1000);

// 2. The extension's bundle.
run(process.execPath, ["build.mjs"], { cwd: here, stdio: "inherit" });
const pkg = JSON.parse(readFileSync(join(here, "package.json"), "utf8"));
if (pkg.version !== release.Version) {
  console.error(`vsix: the extension is ${pkg.version} but bridle is ${release.Version} (VERSION): make them equal`);
  process.exit(1);
}

// 3. One package per target.
for (const t of targets) {
  const bin = resolve(repo, release.Binaries[platforms[t]]);
  const stage = mkdtempSync(join(tmpdir(), "bridle-vsix-"));
  try {
    for (const f of ["package.json", "README.md", ".vscodeignore", "resources", "dist"]) cpSync(join(here, f), join(stage, f), { recursive: true });
    cpSync(join(repo, "LICENSE"), join(stage, "LICENSE"));
    // The name the extension looks for (src/binary.ts, bundledPath).
    const exe = t.startsWith("win32-") ? "bridle.exe" : "bridle";
    mkdirSync(join(stage, "bin"));
    cpSync(bin, join(stage, "bin", exe));
    // Fixed modes, whatever the checkout's umask: the zip keeps them, and
    // VS Code's unzip restores the binary's executable bit.
    const modes = (d) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        chmodSync(join(d, e.name), e.isDirectory() ? 0o755 : 0o644);
        if (e.isDirectory()) modes(join(d, e.name));
      }
    };
    modes(stage);
    chmodSync(join(stage, "bin", exe), 0o755);
    const file = join(out, `bridle-vscode-${pkg.version}-${t}.vsix`);
    run(
      vsce,
      [
        "package",
        "--target", t,
        "--no-dependencies", // the bundle holds them
        "--no-update-package-json",
        "--baseContentUrl", "https://github.com/bridle-dev/bridle/blob/HEAD/editors/vscode",
        "--baseImagesUrl", "https://github.com/bridle-dev/bridle/raw/HEAD/editors/vscode",
        "--out", file,
      ],
      { cwd: stage, env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) }, stdio: ["ignore", "ignore", "inherit"] },
    );
    console.log(`${file} (${(statSync(file).size / 1024 / 1024).toFixed(1)} MiB, bridle ${release.Version} ${release.Commit})`);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}
// The unpacked binaries were kept for the packages only.
rmSync(join(out, ".build"), { recursive: true, force: true });

// Bundles the extension (Node, CJS) and the chat view script (browser).
import { build } from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";

const watch = process.argv.includes("--watch");
await mkdir("dist", { recursive: true });
await Promise.all([
  build({
    entryPoints: ["src/extension.ts"],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
    outfile: "dist/extension.js",
    sourcemap: true,
    logLevel: "warning",
  }),
  build({
    entryPoints: ["src/webview/main.ts"],
    bundle: true,
    platform: "browser",
    format: "iife",
    target: "es2022",
    outfile: "dist/webview.js",
    logLevel: "warning",
  }),
  copyFile("src/webview/style.css", "dist/webview.css"),
]);
if (watch) console.log("watch mode is not supported; rerun npm run build");

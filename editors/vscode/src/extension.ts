import * as vscode from "vscode";
import { Controller } from "./controller";
import { html } from "./view";

// The fs/* handlers, exported for the unit tests.
export { readTextFile, writeTextFile, sliceLines } from "./buffers";
// The image rules the view and the host share, exported for the unit tests.
export { checkImage, checkPromptImage, promptBlocks, dropImagePlaceholder, maxImageBytes } from "./images";

// Rewind to here: numbering the transcript's prompts, and the confirmation's words.
export { numberPrompts, promptTitle } from "./transcript";
export { rewindConfirmation } from "./rewind";
// Which bridle runs (per platform: bridle.exe on Windows), for the unit tests.
export { bundledPath, resolveBinary } from "./binary";

export const viewId = "bridle.chat";

/** Palette commands; package.json must list exactly these (a unit test checks). */
export const commandIds = ["bridle.newChat", "bridle.stop", "bridle.resumeSession", "bridle.showEventLog", "bridle.selectMode"] as const;

let controller: Controller | undefined;

export function activate(context: vscode.ExtensionContext): { controller: Controller } {
  const log = vscode.window.createOutputChannel("bridle");
  const c = new Controller(context, log);
  controller = c;
  context.subscriptions.push(
    log,
    c,
    vscode.window.registerWebviewViewProvider(
      viewId,
      {
        resolveWebviewView(view) {
          const media = vscode.Uri.joinPath(context.extensionUri, "dist");
          view.webview.options = { enableScripts: true, localResourceRoots: [media] };
          c.attach(view);
          view.webview.html = html(view.webview, media);
        },
      },
      { webviewOptions: { retainContextWhenHidden: true } },
    ),
    vscode.commands.registerCommand("bridle.newChat", async () => {
      await vscode.commands.executeCommand(`${viewId}.focus`);
      await c.newChat();
    }),
    vscode.commands.registerCommand("bridle.stop", () => c.stop()),
    vscode.commands.registerCommand("bridle.resumeSession", async () => {
      await vscode.commands.executeCommand(`${viewId}.focus`);
      await c.resumeSession();
    }),
    vscode.commands.registerCommand("bridle.showEventLog", () => c.showEventLog()),
    vscode.commands.registerCommand("bridle.selectMode", () => c.selectMode()),
  );
  return { controller: c };
}

export function deactivate(): void {
  controller?.dispose();
  controller = undefined;
}

import * as vscode from "vscode";

/** The chat view's page: a strict CSP, the bundled script and style. */
export function html(webview: vscode.Webview, media: vscode.Uri): string {
  const nonce = [...Array(32)].map(() => Math.floor(Math.random() * 36).toString(36)).join("");
  const script = webview.asWebviewUri(vscode.Uri.joinPath(media, "webview.js"));
  const style = webview.asWebviewUri(vscode.Uri.joinPath(media, "webview.css"));
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource}; script-src 'nonce-${nonce}'; img-src ${webview.cspSource} data:;">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>bridle</title>
</head>
<body>
<header id="bar">
  <div class="row">
    <h1 id="title"></h1>
    <button id="sessions" class="secondary" title="Resume an earlier session">Sessions</button>
    <button id="new" class="secondary" title="New chat">New</button>
  </div>
  <div class="row">
    <select id="mode" title="Mode" aria-label="Mode"></select>
    <span id="config"></span>
    <span class="spacer"></span>
    <span id="usage" title="Context window in use"></span>
  </div>
</header>
<main id="log" aria-live="polite"></main>
<footer>
  <div id="hint"></div>
  <div id="attach-error" role="alert"></div>
  <div id="attachments" aria-label="Images to send" hidden></div>
  <textarea id="input" rows="3" placeholder="Ask bridle… (Enter to send, Shift+Enter for a new line, /constraint or /decision to pin)"></textarea>
  <div class="actions">
    <span id="state"></span>
    <button id="stop" class="secondary" disabled>Stop</button>
    <button id="send">Send</button>
  </div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
}

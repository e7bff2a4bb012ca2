// ACP's fs/read_text_file and fs/write_text_file, answered from VS Code's
// text documents: bridle reads the text the user has not saved yet, and its
// edits land in the editor's buffer (undoable, no "file changed on disk"
// conflict) instead of behind the editor's back.

import * as vscode from "vscode";
import * as acp from "@agentclientprotocol/sdk";

/** The open document for an absolute file path, if VS Code has one. */
export function openDocument(uri: vscode.Uri): vscode.TextDocument | undefined {
  const key = uri.toString();
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.toString() === key);
}

function fileUri(p: unknown): vscode.Uri {
  if (typeof p !== "string" || !p) throw acp.RequestError.invalidParams({ path: p }, "path must be a non-empty string");
  // bridle sends absolute, already confined paths; anything else is a bug on its side.
  if (!p.startsWith("/") && !/^[A-Za-z]:[\\/]/.test(p)) throw acp.RequestError.invalidParams({ path: p }, `path must be absolute, got "${p}"`);
  return vscode.Uri.file(p);
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** True when a vscode.workspace.fs error (or a Node one) says the file does not exist. */
function notFound(err: unknown): boolean {
  const e = err as { code?: string; name?: string } | undefined;
  return e?.code === "FileNotFound" || e?.code === "ENOENT" || e?.name === "EntryNotFound (FileSystemError)" || /EntryNotFound|ENOENT/.test(message(err));
}

/**
 * The lines [line, line+limit) of text, 1-based, each with its own line
 * ending; either bound may be absent.
 */
export function sliceLines(text: string, line?: number | null, limit?: number | null): string {
  if (line == null && limit == null) return text;
  if (line != null && (!Number.isInteger(line) || line < 1)) throw acp.RequestError.invalidParams({ line }, `line must be a whole number from 1, got ${line}`);
  if (limit != null && (!Number.isInteger(limit) || limit < 0)) throw acp.RequestError.invalidParams({ limit }, `limit must be a whole number from 0, got ${limit}`);
  const lines = text.split(/(?<=\n)/);
  const start = (line ?? 1) - 1;
  return lines.slice(start, limit == null ? undefined : start + limit).join("");
}

/**
 * fs/read_text_file: the open document's current text (unsaved changes
 * included) when VS Code has the file open, else the file on disk.
 */
export async function readTextFile(req: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse> {
  const uri = fileUri(req.path);
  const doc = openDocument(uri);
  let text: string;
  if (doc) {
    text = doc.getText();
  } else {
    let data: Uint8Array;
    try {
      data = await vscode.workspace.fs.readFile(uri);
    } catch (err) {
      if (notFound(err)) throw new acp.RequestError(-32002, `Resource not found: ${uri.fsPath} does not exist`, { uri: uri.toString() });
      throw acp.RequestError.internalError({ path: uri.fsPath }, `VS Code could not read ${uri.fsPath}: ${message(err)}`);
    }
    // As VS Code shows it: UTF-8 without its byte-order mark.
    text = new TextDecoder("utf-8").decode(data);
  }
  return { content: sliceLines(text, req.line, req.limit) };
}

/**
 * fs/write_text_file: the new content replaces the whole document as one
 * WorkspaceEdit, so it shows in the editor and one undo takes it back. A
 * document that had no unsaved changes is saved afterwards (the file on
 * disk ends up as if bridle had written it); one with unsaved changes stays
 * unsaved, for the user to review and save. A file that does not exist is
 * created on disk.
 */
export async function writeTextFile(req: acp.WriteTextFileRequest): Promise<acp.WriteTextFileResponse> {
  const uri = fileUri(req.path);
  if (typeof req.content !== "string") throw acp.RequestError.invalidParams({ content: typeof req.content }, "content must be a string");
  let doc = openDocument(uri);
  if (!doc) {
    try {
      doc = await vscode.workspace.openTextDocument(uri);
    } catch (err) {
      let exists = true;
      try {
        await vscode.workspace.fs.stat(uri);
      } catch (statErr) {
        exists = !notFound(statErr);
      }
      if (exists) throw acp.RequestError.internalError({ path: uri.fsPath }, `VS Code could not open ${uri.fsPath}: ${message(err)}`);
      // No buffer can hold unsaved text for a new file: write it to disk.
      try {
        await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(req.content));
      } catch (writeErr) {
        throw acp.RequestError.internalError({ path: uri.fsPath }, `VS Code could not create ${uri.fsPath}: ${message(writeErr)}`);
      }
      return {};
    }
  }
  const wasDirty = doc.isDirty;
  if (doc.getText() !== req.content) {
    const edit = new vscode.WorkspaceEdit();
    const all = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
    edit.replace(uri, all, req.content, { label: "bridle", needsConfirmation: false });
    let applied: boolean;
    try {
      applied = await vscode.workspace.applyEdit(edit);
    } catch (err) {
      throw acp.RequestError.internalError({ path: uri.fsPath }, `VS Code did not apply the edit to ${uri.fsPath}: ${message(err)}`);
    }
    if (!applied) {
      throw acp.RequestError.internalError({ path: uri.fsPath }, `VS Code refused the edit to ${uri.fsPath} (is the file read-only?); its buffer and the disk are unchanged`);
    }
  }
  if (!wasDirty && doc.isDirty) {
    let saved: boolean;
    try {
      saved = await doc.save();
    } catch (err) {
      throw acp.RequestError.internalError({ path: uri.fsPath }, `the new text is in VS Code's buffer of ${uri.fsPath}, but saving it failed: ${message(err)}`);
    }
    if (!saved) throw acp.RequestError.internalError({ path: uri.fsPath }, `the new text is in VS Code's buffer of ${uri.fsPath}, but VS Code did not save it`);
  }
  return {};
}

// The chat controller: one bridle process per window, the current session,
// the transcript, approvals, and the bridge to the webview and status bar.

import * as fs from "node:fs";
import * as path from "node:path";
import { execFile } from "node:child_process";
import * as vscode from "vscode";
import * as acp from "@agentclientprotocol/sdk";
import { Agent, AgentStartError } from "./agent";
import { readTextFile, writeTextFile } from "./buffers";
import { resolveBinary, versionWarning, bundledPath, type Binary } from "./binary";
import { Transcript, numberPrompts, type Item, type DiffView, type PromptInfo } from "./transcript";
import { rewindConfirmation, type RewindPlan } from "./rewind";
import { statusText, statusTooltip } from "./usage";
import type { ToWebview, FromWebview } from "./protocol";
import { checkPromptImage, promptBlocks, type PromptImage } from "./images";

interface PendingPermission {
  itemId: string;
  req: acp.RequestPermissionRequest;
  resolve(r: acp.RequestPermissionResponse): void;
}

export class Controller implements vscode.Disposable {
  private agent: Agent | undefined;
  private starting: Promise<Agent> | undefined;
  private view: vscode.WebviewView | undefined;
  private readonly transcript = new Transcript();
  private readonly pending = new Map<string, PendingPermission>();
  private readonly status: vscode.StatusBarItem;
  private readonly diffs = new Map<string, string>();
  private diffSeq = 0;
  /** Updates that arrive for a session before session/new has answered with its id. */
  private early: acp.SessionNotification[] | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  sessionId: string | undefined;
  /** The session's title: from session/list, then session_info_update. */
  title: string | undefined;
  modes: acp.SessionModeState | undefined;
  configOptions: acp.SessionConfigOption[] = [];
  commands: acp.AvailableCommand[] = [];
  running = false;
  usage: { used: number; size: number } | undefined;
  /** The session of a bridle that went away; the next prompt reopens it. */
  private orphan: string | undefined;

  constructor(
    private readonly ctx: vscode.ExtensionContext,
    private readonly log: vscode.OutputChannel,
  ) {
    this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
    this.status.name = "bridle context";
    this.status.command = "bridle.chat.focus";
    this.disposables.push(
      this.status,
      vscode.workspace.registerTextDocumentContentProvider("bridle-diff", {
        provideTextDocumentContent: (uri) => this.diffs.get(uri.query) ?? "",
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (["bridle.path", "bridle.args", "bridle.env", "bridle.editorBuffers"].some((k) => e.affectsConfiguration(k))) this.restartLater();
      }),
    );
  }

  private restartPending = false;

  /**
   * A new path, arguments or environment take effect in a new bridle
   * process: the current one ends once idle, and the next prompt starts the
   * new one and reopens the session from bridle's log.
   */
  private restartLater(): void {
    if (!this.agent) return;
    if (this.running) {
      this.restartPending = true;
      return;
    }
    this.restartPending = false;
    this.log.appendLine("settings changed: restarting bridle on the next prompt");
    this.agent.dispose();
  }

  dispose(): void {
    this.cancelPending();
    this.agent?.dispose();
    this.agent = undefined;
    for (const d of this.disposables) d.dispose();
  }

  // ---- process and session lifecycle ----

  private cwd(): string {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
  }

  private get extensionVersion(): string {
    return String(this.ctx.extension?.packageJSON?.version ?? "0");
  }

  /**
   * The command line and environment bridle runs with: the binary is the
   * bridle.path setting, else the one bundled in the extension, else
   * `bridle` on PATH (binary.ts).
   */
  launch(): { command: string; args: string[]; env: NodeJS.ProcessEnv; binary: Binary } {
    const cfg = vscode.workspace.getConfiguration("bridle");
    const binary = resolveBinary(cfg.get<string>("path"), this.ctx.extensionUri.fsPath, (l) => this.log.appendLine(l));
    const args = cfg.get<string[]>("args") ?? [];
    const env = { ...process.env, ...(cfg.get<Record<string, string>>("env") ?? {}) };
    return { command: binary.command, args, env, binary };
  }

  /** Version mismatches already shown in this window, by binary and version. */
  private readonly warned = new Set<string>();

  private checkVersion(binary: Binary, agentVersion: string | undefined): void {
    const hasBundled = fs.existsSync(bundledPath(this.ctx.extensionUri.fsPath));
    const msg = versionWarning(binary, agentVersion, this.extensionVersion, hasBundled);
    if (!msg) {
      this.log.appendLine(`bridle ${agentVersion} (${binary.source}) matches the extension`);
      return;
    }
    this.log.appendLine(`warning: ${msg}`);
    const key = `${binary.command}\0${agentVersion}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    void vscode.window.showWarningMessage(msg, "Open Settings").then((a) => {
      if (a) void vscode.commands.executeCommand("workbench.action.openSettings", "bridle.path");
    });
  }

  async ensureAgent(): Promise<Agent> {
    if (this.agent?.alive) return this.agent;
    if (this.starting) return this.starting;
    const { command, args, env, binary } = this.launch();
    // Offered at initialize, so a change of the setting takes a new process.
    const buffers = vscode.workspace.getConfiguration("bridle").get<boolean>("editorBuffers", true);
    this.log.appendLine(`starting ${command} ${args.join(" ")} in ${this.cwd()} (${binary.source})${buffers ? "" : " without the editor's buffers"}`);
    this.starting = Agent.start(
      { command, args, env, cwd: this.cwd(), clientVersion: this.extensionVersion },
      {
        update: (n) => this.onUpdate(n),
        permission: (req, signal) => this.permission(req, signal),
        fs: buffers ? { read: (req) => this.logged("read", req.path, readTextFile(req)), write: (req) => this.logged("write", req.path, writeTextFile(req)) } : undefined,
        exit: (code, signal, stderr) => this.onExit(code, signal, stderr),
      },
    );
    try {
      this.agent = await this.starting;
      const info = this.agent.info;
      this.log.appendLine(`connected to ${info.agentInfo?.name ?? "agent"} ${info.agentInfo?.version ?? ""} (pid ${this.agent.pid})`);
      // initialize's agentInfo.version is what `bridle --version` prints,
      // from the very process that runs: no second process to start.
      this.checkVersion(binary, info.agentInfo?.version);
      return this.agent;
    } finally {
      this.starting = undefined;
    }
  }

  /**
   * Logs a buffer request that failed. An unexpected exception becomes an
   * error whose message says what failed (the SDK would answer a bare
   * "Internal error").
   */
  private async logged<T>(what: string, p: string, r: Promise<T>): Promise<T> {
    try {
      return await r;
    } catch (err) {
      const e = err instanceof acp.RequestError ? err : acp.RequestError.internalError({ path: p }, `VS Code could not ${what} ${p}: ${err instanceof Error ? err.message : String(err)}`);
      this.log.appendLine(`fs ${what} ${p} failed: ${e.message}`);
      throw e;
    }
  }

  private onExit(code: number | null, signal: string | null, stderr: string): void {
    this.log.appendLine(`bridle exited (${signal ?? `code ${code}`})`);
    if (stderr.trim()) this.log.appendLine(stderr.trim());
    this.agent = undefined;
    this.cancelPending();
    if (this.running) {
      this.running = false;
      this.push(this.transcript.addNotice(`bridle stopped unexpectedly (${signal ?? `exit code ${code}`}); see the "bridle" output for its log.`, "error"));
    }
    // bridle keeps the session in its log: the next prompt resumes it.
    this.orphan = this.sessionId ?? this.orphan;
    this.sessionId = undefined;
    // The title stays: the next prompt reopens the same session.
    this.postState();
  }

  private report(err: unknown): void {
    const msg = err instanceof Error ? err.message : String(err);
    this.log.appendLine(`error: ${msg}`);
    if (err instanceof AgentStartError) {
      void vscode.window.showErrorMessage(msg, "Open Settings").then((a) => {
        if (a) void vscode.commands.executeCommand("workbench.action.openSettings", "bridle.path");
      });
    } else if ((err as { code?: number }).code === -32000) {
      // ACP's "auth required": bridle has no model provider. Keys and
      // BRIDLE_MODEL go in bridle.env; bridle restarts when it changes.
      void vscode.window.showErrorMessage(msg, "Open Settings").then((a) => {
        if (a) void vscode.commands.executeCommand("workbench.action.openSettings", "bridle.env");
      });
    } else {
      void vscode.window.showErrorMessage(`bridle: ${msg}`);
    }
    this.push(this.transcript.addNotice(msg, "error"));
  }

  private sessionResult(sessionId: string, r: { modes?: acp.SessionModeState | null; configOptions?: acp.SessionConfigOption[] | null }): void {
    this.sessionId = sessionId;
    this.modes = r.modes ?? undefined;
    this.configOptions = r.configOptions ?? [];
    void this.ctx.workspaceState.update("bridle.lastSession", sessionId);
  }

  private async closeCurrent(agent: Agent): Promise<void> {
    if (!this.sessionId) return;
    if (this.running) await this.stop();
    if (agent.info.agentCapabilities?.sessionCapabilities?.close) {
      await agent.request(acp.methods.agent.session.close, { sessionId: this.sessionId }).catch(() => {});
    }
    this.sessionId = undefined;
  }

  async newChat(): Promise<void> {
    try {
      const agent = await this.ensureAgent();
      await this.closeCurrent(agent);
      this.transcript.clear();
      this.usage = undefined;
      this.title = undefined;
      this.status.hide();
      this.commands = [];
      this.early = [];
      let r: acp.NewSessionResponse;
      try {
        r = await agent.request(acp.methods.agent.session.new, { cwd: this.cwd(), mcpServers: [] });
      } finally {
        const early = this.early;
        this.early = undefined;
        this.sessionId = r!?.sessionId;
        for (const n of early) this.onUpdate(n);
      }
      this.sessionResult(r.sessionId, r);
      this.log.appendLine(`new session ${r.sessionId}`);
    } catch (err) {
      this.report(err);
    }
    this.postState(true);
  }

  /**
   * When the view first opens in a window: reopen the session this workspace
   * used last (the chat survives reloads), or start a new one.
   */
  private async restoreOrStart(): Promise<void> {
    const last = this.ctx.workspaceState.get<string>("bridle.lastSession");
    const restore = vscode.workspace.getConfiguration("bridle").get<boolean>("restoreLastSession", true);
    if (last && restore) {
      try {
        const agent = await this.ensureAgent();
        if (agent.info.agentCapabilities?.loadSession) {
          // A session deleted since, or unknown to this database, is no error: start afresh.
          const known = (await this.listSessions()).find((s) => s.sessionId === last);
          if (known && (await this.resumeSession(last, "Reopened the last session", known.title ?? undefined))) return;
        }
      } catch (err) {
        this.report(err);
        return;
      }
    }
    await this.ensureSession();
  }

  private async ensureSession(): Promise<string | undefined> {
    if (!this.sessionId && this.orphan) {
      const id = this.orphan;
      this.orphan = undefined;
      await this.resumeSession(id, "Resumed session", this.title);
      if (this.sessionId === id) this.push(this.transcript.addNotice("bridle was restarted; the session continues from its log."));
    }
    if (!this.sessionId) await this.newChat();
    return this.sessionId;
  }

  /** Whether this bridle takes images in prompts; undefined while none runs. */
  imagesAccepted(): boolean | undefined {
    return this.agent?.alive ? this.agent.info.agentCapabilities?.promptCapabilities?.image === true : undefined;
  }

  async send(text: string, images: PromptImage[] = []): Promise<void> {
    text = text.trim();
    if (!text && !images.length) return;
    if (this.running) {
      void vscode.window.showWarningMessage("bridle is still answering; press Stop first or wait for the turn to end.");
      return;
    }
    // The view checks each image before it shows it; this guards the
    // host against anything else that posts a prompt.
    const bad = images.map(checkPromptImage).find((e) => e !== undefined);
    if (bad) {
      this.refuse(bad, text, images);
      return;
    }
    const sessionId = await this.ensureSession();
    if (!sessionId || !this.agent) return;
    if (images.length && !this.imagesAccepted()) {
      this.refuse("This bridle takes no images in prompts (its initialize does not offer promptCapabilities.image): update bridle, or describe the image in words.", text, images);
      return;
    }
    const user = this.transcript.addUser(text, images);
    this.push(user);
    this.running = true;
    this.postState();
    try {
      const r = await this.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: promptBlocks(text, images) });
      if (r.stopReason !== "end_turn") this.push(this.transcript.addNotice(stopText(r.stopReason), r.stopReason === "cancelled" ? "warning" : "info"));
    } catch (err) {
      // -32602: bridle refused the prompt before it began (a model that
      // takes no images, say). Its text and images go back to the input.
      if (images.length && (err as { code?: number }).code === -32602) {
        // Not part of the session: the prompt leaves the transcript.
        this.transcript.remove(user.id);
        this.postState(true);
        this.refuse(`bridle did not take the prompt with its ${images.length === 1 ? "image" : `${images.length} images`}: ${errorText(err)}`, text, images);
      } else this.report(err);
    } finally {
      this.running = false;
      this.cancelPending();
      this.postState();
      if (this.restartPending) this.restartLater();
      else await this.syncPrompts();
    }
  }

  /**
   * Numbers the transcript's user messages with bridle's prompts
   * (`_bridle/prompts`), which gives them "Rewind to here", and marks what
   * rewinds went back over. Returns the prompts, or undefined when this
   * bridle does not list them.
   */
  async syncPrompts(): Promise<PromptInfo[] | undefined> {
    const agent = this.agent;
    const sessionId = this.sessionId;
    if (!agent?.alive || !sessionId || !agent.offers("prompts", "_bridle/prompts")) return undefined;
    try {
      const r = await agent.ext<{ prompts?: PromptInfo[] }>("_bridle/prompts", { sessionId });
      if (sessionId !== this.sessionId) return undefined;
      const prompts = r.prompts ?? [];
      for (const it of numberPrompts(this.transcript.items, prompts)) this.push(it);
      return prompts;
    } catch (err) {
      this.log.appendLine(`_bridle/prompts failed: ${errorText(err)}`);
      return undefined;
    }
  }

  /**
   * "Rewind to here" on a user message: asks bridle what a rewind to
   * before that prompt would put back (`_bridle/rewind_preview`), shows it
   * in a confirmation, and on yes sends `/rewind N`.
   */
  async rewindTo(itemId: string): Promise<void> {
    if (this.running) {
      void vscode.window.showWarningMessage("bridle is still answering; press Stop first or wait for the turn to end.");
      return;
    }
    const users = () => this.transcript.items.filter((i): i is Extract<Item, { kind: "user" }> => i.kind === "user");
    const at = users().findIndex((i) => i.id === itemId);
    const was = users()[at];
    // A bridle that went away is started again; reopening the session
    // replays the transcript, whose messages then have new ids.
    if (!this.agent?.alive || !this.sessionId) await this.ensureSession();
    const agent = this.agent;
    const sessionId = this.sessionId;
    // Starting bridle or the session failed: that was reported already.
    if (!agent?.alive || !sessionId) return;
    if (!agent.offers("prompts", "_bridle/prompts")) {
      void vscode.window.showWarningMessage("This bridle cannot rewind (its initialize offers no _bridle/prompts): update bridle.");
      return;
    }
    // The numbers are asked again: the log is the authority, not the view.
    const prompts = await this.syncPrompts();
    if (!prompts) {
      void vscode.window.showWarningMessage("bridle could not list this session's prompts, so it cannot rewind; the bridle output channel says why.");
      return;
    }
    const again = users()[at];
    const it = users().find((i) => i.id === itemId) ?? (was && again?.text === was.text ? again : undefined);
    if (!it || it.prompt === undefined) {
      void vscode.window.showWarningMessage("bridle has no prompt of this session that matches this message, so it cannot rewind to it.");
      return;
    }
    const n = it.prompt;
    let plan: RewindPlan;
    try {
      plan = await agent.ext<RewindPlan>("_bridle/rewind_preview", { sessionId, prompt: n });
    } catch (err) {
      this.report(err);
      return;
    }
    const text = prompts.find((p) => p.n === n)?.text ?? it.text;
    const { message, detail } = rewindConfirmation(plan, text, this.cwd());
    this.log.appendLine(`rewind preview for prompt ${n}: ${JSON.stringify(plan)}`);
    const pick = await vscode.window.showWarningMessage(message, { modal: true, detail }, "Rewind");
    if (pick !== "Rewind" || sessionId !== this.sessionId) return;
    await this.send(`/rewind ${n}`);
  }

  /** Shows why a prompt was not sent, and gives it back to the input. */
  private refuse(msg: string, text: string, images: PromptImage[]): void {
    this.log.appendLine(`prompt refused: ${msg}`);
    void vscode.window.showErrorMessage(msg);
    this.push(this.transcript.addNotice(msg, "error"));
    this.post({ type: "draft", text, images });
  }

  async stop(): Promise<void> {
    if (!this.sessionId || !this.agent) return;
    this.log.appendLine(`cancel ${this.sessionId}`);
    // ACP: the client answers pending permission requests as cancelled.
    this.cancelPending();
    await this.agent.notify(acp.methods.agent.session.cancel, { sessionId: this.sessionId });
  }

  async setMode(modeId: string): Promise<void> {
    if (!this.sessionId || !this.agent) {
      await this.ensureSession();
      if (!this.sessionId || !this.agent) return;
    }
    try {
      await this.agent.request(acp.methods.agent.session.setMode, { sessionId: this.sessionId, modeId });
      if (this.modes) this.modes.currentModeId = modeId;
    } catch (err) {
      this.report(err);
    }
    this.postState();
  }

  async setConfigOption(configId: string, value: string): Promise<void> {
    if (!this.sessionId || !this.agent) return;
    try {
      const r = await this.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: this.sessionId, configId, value });
      this.configOptions = r.configOptions ?? this.configOptions;
    } catch (err) {
      this.report(err);
    }
    this.postState();
  }

  async selectMode(): Promise<void> {
    await this.ensureSession();
    const modes = this.modes?.availableModes ?? [];
    if (!modes.length) {
      void vscode.window.showInformationMessage("bridle offers no modes for this session.");
      return;
    }
    const pick = await vscode.window.showQuickPick(
      modes.map((m) => ({ label: m.name, description: m.id === this.modes?.currentModeId ? "current" : m.id, detail: m.description ?? undefined, id: m.id })),
      { title: "bridle: Select Mode", placeHolder: "Mode for this session" },
    );
    if (pick) await this.setMode(pick.id);
  }

  async listSessions(): Promise<acp.SessionInfo[]> {
    const agent = await this.ensureAgent();
    if (!agent.info.agentCapabilities?.sessionCapabilities?.list) throw new Error("this bridle does not support session/list; update bridle.");
    const out: acp.SessionInfo[] = [];
    let cursor: string | undefined;
    do {
      const r = await agent.request(acp.methods.agent.session.list, { cwd: this.cwd(), cursor: cursor ?? null });
      out.push(...r.sessions);
      cursor = r.nextCursor ?? undefined;
    } while (cursor && out.length < 500);
    return out;
  }

  async resumeSession(sessionId?: string, notice = "Resumed session", title?: string): Promise<boolean> {
    try {
      if (!sessionId) {
        const sessions = await this.listSessions();
        if (!sessions.length) {
          void vscode.window.showInformationMessage("No earlier bridle sessions in this folder.");
          return false;
        }
        const pick = await vscode.window.showQuickPick(
          sessions.map((s) => {
            // The open session's title may be newer than the list's (session_info_update).
            const t = (s.sessionId === this.sessionId ? this.title : undefined) || s.title || undefined;
            return {
              label: t || "(untitled)",
              description: s.updatedAt ? new Date(s.updatedAt).toLocaleString() : undefined,
              detail: s.sessionId === this.sessionId ? `${s.sessionId} (open)` : s.sessionId,
              id: s.sessionId,
              title: t,
            };
          }),
          // The view is focused just before this opens, and a webview may take
          // focus back a moment later: without ignoreFocusOut that closes the pick.
          { title: "bridle: Resume Session", placeHolder: "Pick a session to reopen", matchOnDetail: true, ignoreFocusOut: true },
        );
        if (!pick) return false;
        sessionId = pick.id;
        title = pick.title;
      }
      const agent = await this.ensureAgent();
      await this.closeCurrent(agent);
      this.transcript.clear();
      this.usage = undefined;
      this.status.hide();
      this.title = title;
      this.postState(true);
      // Updates replayed by session/load land in the transcript as they come.
      this.sessionId = sessionId;
      if (agent.info.agentCapabilities?.loadSession) {
        const r = await agent.request(acp.methods.agent.session.load, { sessionId, cwd: this.cwd(), mcpServers: [] });
        this.sessionResult(sessionId, r);
      } else {
        const r = await agent.request(acp.methods.agent.session.resume, { sessionId, cwd: this.cwd(), mcpServers: [] });
        this.sessionResult(sessionId, r);
        this.push(this.transcript.addNotice("Resumed; this bridle cannot replay the history."));
      }
      this.push(this.transcript.addNotice(this.title ? `${notice}: ${this.title}` : `${notice} ${sessionId}`));
      this.log.appendLine(`resumed session ${sessionId}`);
      // The replayed prompts get their numbers, and rewound turns show as such.
      await this.syncPrompts();
      this.postState(true);
      return true;
    } catch (err) {
      this.sessionId = undefined;
      this.report(err);
      this.postState(true);
      return false;
    }
  }

  async showEventLog(): Promise<void> {
    const sessionId = this.sessionId ?? this.ctx.workspaceState.get<string>("bridle.lastSession");
    if (!sessionId) {
      void vscode.window.showInformationMessage("No bridle session yet: start a chat first.");
      return;
    }
    const { command, args, env } = this.launch();
    const text = await new Promise<string>((resolve) => {
      // Global flags such as --db come first, so the log is read from the same database.
      execFile(command, [...args, "log", sessionId], { env, cwd: this.cwd(), maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
        if (err) resolve(`bridle log ${sessionId} failed: ${stderr || err.message}\n${stdout}`);
        else resolve(stdout);
      });
    });
    const doc = await vscode.workspace.openTextDocument({ content: text, language: "log" });
    await vscode.window.showTextDocument(doc, { preview: false });
  }

  // ---- agent → client ----

  private onUpdate(n: acp.SessionNotification): void {
    if (n.sessionId !== this.sessionId) {
      // bridle may announce a new session's commands before answering session/new.
      if (this.early && this.early.length < 200) this.early.push(n);
      return;
    }
    const u = n.update;
    switch (u.sessionUpdate) {
      case "usage_update":
        this.usage = { used: u.used, size: u.size };
        this.status.text = statusText(u);
        this.status.tooltip = statusTooltip(u);
        this.status.show();
        this.post({ type: "usage", text: statusText(u) });
        return;
      case "current_mode_update":
        if (this.modes) this.modes.currentModeId = u.currentModeId;
        this.postState();
        return;
      case "available_commands_update":
        this.commands = u.availableCommands;
        this.postState();
        return;
      case "config_option_update":
        this.configOptions = u.configOptions;
        this.postState();
        return;
      case "session_info_update":
        // An absent title leaves it as it is; null clears it.
        if (u.title !== undefined) {
          this.title = u.title ?? undefined;
          this.postState();
        }
        return;
      default:
        for (const it of this.transcript.apply(u)) this.push(it);
    }
  }

  /** Handles session/request_permission: asks inline and by notification; the first answer wins. */
  permission(req: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse> {
    return new Promise((resolve) => {
      const item = this.transcript.addPermission(req);
      this.pending.set(item.id, { itemId: item.id, req, resolve });
      this.push(item);
      signal.addEventListener("abort", () => this.answer(item.id, undefined));
      const cfg = vscode.workspace.getConfiguration("bridle");
      if (item.diffs.length && cfg.get<boolean>("openDiffOnApproval", true)) void this.openDiff(item.diffs[0]);
      // The same choice as a notification, for when the chat view is hidden.
      void vscode.window
        .showInformationMessage(
          item.command && item.command !== item.title ? `bridle asks: ${item.title} ($ ${item.command})` : `bridle asks: ${item.title}`,
          ...req.options.map((o) => o.name),
        )
        .then((name) => {
          const opt = req.options.find((o) => o.name === name);
          if (opt) this.answer(item.id, opt.optionId);
        });
    });
  }

  /** Answers a pending approval; undefined means cancelled. The first answer wins. */
  answer(itemId: string, optionId: string | undefined): void {
    const p = this.pending.get(itemId);
    if (!p) return;
    this.pending.delete(itemId);
    p.resolve(optionId ? { outcome: { outcome: "selected", optionId } } : { outcome: { outcome: "cancelled" } });
    const it = this.transcript.answerPermission(itemId, optionId ?? "cancelled");
    if (it) this.push(it);
    this.log.appendLine(`approval ${p.req.toolCall.toolCallId}: ${optionId ?? "cancelled"}`);
  }

  private cancelPending(): void {
    for (const id of [...this.pending.keys()]) this.answer(id, undefined);
  }

  pendingApprovals(): string[] {
    return [...this.pending.keys()];
  }

  async openDiff(d: DiffView): Promise<void> {
    const key = String(++this.diffSeq);
    let before = d.oldText;
    if (before === null) {
      try {
        before = Buffer.from(await vscode.workspace.fs.readFile(vscode.Uri.file(d.path))).toString("utf8");
      } catch {
        before = "";
      }
    }
    this.diffs.set(`${key}-old`, before);
    this.diffs.set(`${key}-new`, d.newText);
    const name = path.basename(d.path);
    const left = vscode.Uri.from({ scheme: "bridle-diff", path: d.path, query: `${key}-old` });
    const right = vscode.Uri.from({ scheme: "bridle-diff", path: d.path, query: `${key}-new` });
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} ↔ bridle's edit`, { preview: true, preserveFocus: true });
  }

  /** Opens a path a tool card names: a file at its line, a folder in the explorer. */
  async openFile(p: string, line?: number): Promise<void> {
    const uri = vscode.Uri.file(path.isAbsolute(p) ? p : path.join(this.cwd(), p));
    try {
      const st = await vscode.workspace.fs.stat(uri);
      if (st.type & vscode.FileType.Directory) {
        await vscode.commands.executeCommand("revealInExplorer", uri);
        return;
      }
      const at = line && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
      await vscode.window.showTextDocument(uri, { preview: true, selection: at ? new vscode.Range(at, at) : undefined });
    } catch (err) {
      void vscode.window.showWarningMessage(`bridle: cannot open ${uri.fsPath}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  // ---- webview ----

  attach(view: vscode.WebviewView): void {
    this.view = view;
    view.onDidDispose(() => {
      if (this.view === view) this.view = undefined;
    });
    view.webview.onDidReceiveMessage((m: FromWebview) => this.onMessage(m));
  }

  private async onMessage(m: FromWebview): Promise<void> {
    switch (m.type) {
      case "ready":
        this.postState(true);
        if (!this.sessionId && !this.starting) await this.restoreOrStart();
        return;
      case "send":
        return this.send(m.text, m.images ?? []);
      case "stop":
        return this.stop();
      case "newChat":
        return this.newChat();
      case "setMode":
        return this.setMode(m.modeId);
      case "setConfig":
        return this.setConfigOption(m.configId, m.value);
      case "answer":
        return this.answer(m.itemId, m.optionId);
      case "openDiff": {
        const it = this.transcript.items.find((i) => i.id === m.itemId);
        const d = it && (it.kind === "tool" || it.kind === "permission") ? it.diffs[m.index] : undefined;
        if (d) await this.openDiff(d);
        return;
      }
      case "sessions":
        await this.resumeSession();
        return;
      case "openFile":
        await this.openFile(m.path, m.line);
        return;
      case "rewind":
        await this.rewindTo(m.itemId);
        return;
    }
  }

  private post(m: ToWebview): void {
    void this.view?.webview.postMessage(m);
  }

  private push(it: Item): void {
    this.post({ type: "item", item: it });
  }

  /** Sends the header state; with reset, the whole transcript too. */
  postState(reset = false): void {
    this.post({
      type: "state",
      sessionId: this.sessionId,
      title: this.title,
      root: this.cwd(),
      running: this.running,
      modes: this.modes,
      configOptions: this.configOptions,
      commands: this.commands,
      usage: this.usage ? statusText(this.usage) : undefined,
      images: this.imagesAccepted(),
      items: reset ? this.transcript.items : undefined,
    });
  }

  /** For tests and the event log: the transcript as it stands. */
  items(): readonly Item[] {
    return this.transcript.items;
  }

  /** The bridle process's id, while it runs. */
  agentPid(): number | undefined {
    return this.agent?.alive ? this.agent.pid : undefined;
  }

  statusBar(): vscode.StatusBarItem {
    return this.status;
  }
}

/** An error's message; the data of a JSON-RPC error often says more. */
function errorText(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const data = (err as { data?: unknown }).data;
  const detail = typeof data === "string" ? data : data && typeof data === "object" && "details" in data ? String((data as { details: unknown }).details) : undefined;
  return detail && !msg.includes(detail) ? `${msg}: ${detail}` : msg;
}

function stopText(r: acp.StopReason): string {
  switch (r) {
    case "cancelled":
      return "Stopped: the turn was cancelled.";
    case "max_tokens":
      return "Stopped: the model reached its output limit.";
    case "max_turn_requests":
      return "Stopped: the turn reached its request budget.";
    case "refusal":
      return "Stopped: the model refused.";
    default:
      return `Stopped: ${r}.`;
  }
}

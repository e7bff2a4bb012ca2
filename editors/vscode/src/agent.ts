// The bridle child process and the ACP connection to it. Nothing here knows
// about VS Code, so the same code runs in the extension host and in the unit
// tests.

import { spawn, type ChildProcess } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

export interface AgentOptions {
  /** Binary to run: a name looked up on PATH or a full path. */
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  clientVersion: string;
}

export interface AgentHandlers {
  update(n: acp.SessionNotification): void;
  /** Answers a permission request; may take as long as the user needs. */
  permission(req: acp.RequestPermissionRequest, signal: AbortSignal): Promise<acp.RequestPermissionResponse>;
  /**
   * fs/read_text_file and fs/write_text_file (the editor's buffers). When
   * given, initialize offers clientCapabilities.fs and bridle's file tools
   * read and write through them.
   */
  fs?: {
    read(req: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse>;
    write(req: acp.WriteTextFileRequest): Promise<acp.WriteTextFileResponse>;
  };
  /** The process ended; stderr holds its last lines. */
  exit(code: number | null, signal: NodeJS.Signals | null, stderr: string): void;
}

/** Thrown when the bridle binary cannot be started; the message says how to fix it. */
export class AgentStartError extends Error {}

const stderrKeep = 8 * 1024;

export class Agent {
  readonly info: acp.InitializeResponse;
  private exited = false;

  private constructor(
    private readonly child: ChildProcess,
    private readonly conn: acp.ClientConnection,
    info: acp.InitializeResponse,
  ) {
    this.info = info;
    child.once("exit", () => (this.exited = true));
  }

  /**
   * Spawns bridle and completes the ACP handshake. It rejects with an
   * AgentStartError naming the fix when the binary is missing or does not
   * answer `initialize`.
   */
  static async start(opts: AgentOptions, h: AgentHandlers): Promise<Agent> {
    const child = spawn(opts.command, opts.args, {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (d: string) => {
      stderr = (stderr + d).slice(-stderrKeep);
    });
    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") {
          reject(
            new AgentStartError(
              `Could not start bridle: "${opts.command}" was not found. Set the "bridle.path" ` +
                `setting to the full path of the binary, install bridle on PATH ` +
                `(go install github.com/bridle-dev/bridle@latest), or install the extension's ` +
                `.vsix for your platform, which bundles it.`,
            ),
          );
        } else if (err.code === "EACCES") {
          reject(new AgentStartError(`Could not start bridle: "${opts.command}" is not executable (chmod +x it, or fix "bridle.path").`));
        } else {
          reject(new AgentStartError(`Could not start bridle ("${opts.command}"): ${err.message}`));
        }
      });
    });
    await spawned;
    child.once("exit", (code, signal) => h.exit(code, signal, stderr));
    // A dead child makes writes fail with EPIPE; the exit handler reports it.
    child.stdin!.on("error", () => {});

    let app = acp
      .client({ name: "bridle-vscode" })
      .onNotification(acp.methods.client.session.update, (ctx) => h.update(ctx.params))
      .onRequest(acp.methods.client.session.requestPermission, (ctx) => h.permission(ctx.params, ctx.signal));
    const fs = h.fs;
    if (fs) {
      app = app
        .onRequest(acp.methods.client.fs.readTextFile, (ctx) => fs.read(ctx.params))
        .onRequest(acp.methods.client.fs.writeTextFile, (ctx) => fs.write(ctx.params));
    }
    const stream = acp.ndJsonStream(
      Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout!) as unknown as ReadableStream<Uint8Array>,
    );
    const conn = app.connect(stream);
    const exited = new Promise<never>((_, reject) =>
      child.once("exit", (code, signal) =>
        reject(
          new AgentStartError(
            `bridle exited (${signal ?? `code ${code}`}) before answering initialize.` +
              (stderr.trim() ? ` Its last words: ${stderr.trim().split("\n").slice(-3).join(" | ")}` : ""),
          ),
        ),
      ),
    );
    let info: acp.InitializeResponse;
    try {
      info = await Promise.race([
        conn.agent.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: !!fs, writeTextFile: !!fs }, terminal: false },
          clientInfo: { name: "bridle-vscode", version: opts.clientVersion },
        }),
        exited,
      ]);
    } catch (err) {
      child.kill();
      throw err instanceof AgentStartError ? err : new AgentStartError(`bridle did not complete the ACP handshake: ${String(err)}`);
    }
    exited.catch(() => {});
    return new Agent(child, conn, info);
  }

  get alive(): boolean {
    return !this.exited;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  request<M extends acp.AgentRequestMethod>(method: M, params: acp.AgentRequestParamsByMethod[M]): Promise<acp.AgentRequestResponsesByMethod[M]> {
    return this.conn.agent.request(method, params);
  }

  /** A bridle extension method (`_bridle/...`), when bridle's initialize names it in agentCapabilities._meta.bridle. */
  ext<R>(method: `_${string}`, params: Record<string, unknown>): Promise<R> {
    return this.conn.agent.request<R>(method, params);
  }

  /** Whether bridle's initialize offers an extension method, by its key in agentCapabilities._meta.bridle. */
  offers(key: string, method: string): boolean {
    const meta = this.info.agentCapabilities?._meta as { bridle?: Record<string, unknown> } | undefined;
    return meta?.bridle?.[key] === method;
  }

  notify<M extends acp.AgentNotificationMethod>(method: M, params: acp.AgentNotificationParamsByMethod[M]): Promise<void> {
    return this.conn.agent.notify(method, params);
  }

  /** Closes the connection and ends the process (TERM, then KILL after 2 s). */
  dispose(): void {
    this.conn.close();
    if (this.exited) return;
    this.child.stdin?.end();
    this.child.kill("SIGTERM");
    const t = setTimeout(() => {
      if (!this.exited) this.child.kill("SIGKILL");
    }, 2000);
    t.unref();
  }
}

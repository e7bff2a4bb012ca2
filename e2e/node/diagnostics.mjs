// An editor written with the official ACP TypeScript SDK sees what a
// language server said of an edit: in auto-edit mode, one prompt whose
// edit breaks a Go file; it prints the text of the tool call's result as
// the client received it (session/update tool_call_update content).
// Usage: node diagnostics.mjs BRIDLE_BINARY WORKSPACE (BRIDLE_DB,
// BRIDLE_MODEL, PATH and the settings in the environment). Prints one
// JSON line; exits non-zero on any protocol failure.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [bin, cwd] = process.argv.slice(2);
const child = spawn(bin, [], { stdio: ["pipe", "pipe", "inherit"] });
const texts = [];

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const app = acp
  .client({ name: "bridle-e2e-diagnostics" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const u = params.update;
    if (u.sessionUpdate !== "tool_call_update") return;
    for (const c of u.content ?? []) {
      if (c.type === "content" && c.content?.type === "text") texts.push(c.content.text);
    }
  });

const timeout = setTimeout(() => {
  console.error("timed out");
  process.exit(3);
}, 120000);

let stop;
try {
  await app.connectWith(stream, async (ctx) => {
    await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
    });
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "auto-edit" });
    const res = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "break it" }],
    });
    stop = res.stopReason;
  });
} catch (err) {
  console.error("ACP client failed:", err);
  process.exit(1);
}
clearTimeout(timeout);
child.stdin.end();
console.log(JSON.stringify({ stop, texts }));

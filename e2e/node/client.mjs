// An editor written with the official ACP TypeScript SDK, driving the real
// bridle binary: initialize → session/new → prompt → cancel → load.
// Usage: node client.mjs BRIDLE_BINARY WORKSPACE (BRIDLE_DB and BRIDLE_MODEL
// in the environment). Prints one JSON line with what it saw; exits non-zero
// on any protocol failure.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [bin, cwd] = process.argv.slice(2);
const child = spawn(bin, [], { stdio: ["pipe", "pipe", "inherit"] });
const updates = [];
const report = { updates: {} };

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const app = acp
  .client({ name: "bridle-e2e" })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => ({
    outcome: { outcome: "selected", optionId: params.options[0].optionId },
  }))
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  });

const timeout = setTimeout(() => {
  console.error("timed out");
  process.exit(3);
}, 30000);

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
    });
    report.protocolVersion = init.protocolVersion;
    report.agent = init.agentInfo?.name;

    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    report.sessionId = sessionId;

    const first = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "what do the notes say?" }],
    });
    report.firstStop = first.stopReason;

    // A slow answer, cancelled once it has started to stream.
    const before = updates.length;
    const pending = ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "count slowly" }],
    });
    while (!updates.slice(before).some((u) => u.sessionUpdate === "agent_message_chunk")) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    report.cancelStop = (await pending).stopReason;

    const live = updates.length;
    await ctx.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
    report.replayed = updates.length - live;
    for (const u of updates) report.updates[u.sessionUpdate] = (report.updates[u.sessionUpdate] ?? 0) + 1;
  });
} catch (err) {
  console.error("ACP client failed:", err);
  process.exit(1);
}
clearTimeout(timeout);
child.stdin.end();
console.log(JSON.stringify(report));

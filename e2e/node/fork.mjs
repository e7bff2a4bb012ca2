// An editor written with the official ACP TypeScript SDK forking a
// session of the real bridle binary, as acp.el's and Zed's fork do:
// initialize (the agent must offer sessionCapabilities.fork) → session/new
// → prompt → session/fork → a prompt in the fork; then a second bridle
// process loads the fork and replays it. session/fork is in the SDK's
// unstable entry point, as it is in ACP's unstable schema.
// Usage: node fork.mjs BRIDLE_BINARY WORKSPACE (BRIDLE_DB and BRIDLE_MODEL
// in the environment). Prints one JSON line with what it saw; exits
// non-zero on any protocol failure.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";

const [bin, cwd] = process.argv.slice(2);
const report = {};

const timeout = setTimeout(() => {
  console.error("timed out");
  process.exit(3);
}, 30000);

// connect runs body against a fresh bridle process with the updates it
// sends collected, and ends that process when body returns.
async function connect(body) {
  const child = spawn(bin, [], { stdio: ["pipe", "pipe", "inherit"] });
  const updates = [];
  const app = acp
    .client({ name: "bridle-e2e-fork" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  try {
    await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
      });
      await body(ctx, init, updates);
    });
  } finally {
    child.stdin.end();
    await new Promise((r) => (child.exitCode !== null ? r() : child.on("exit", r)));
  }
}

const texts = (updates, sessionId, kind) =>
  updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind)
    .map((u) => u.update.content?.text ?? "");

try {
  await connect(async (ctx, init) => {
    report.offersFork = init.agentCapabilities?.sessionCapabilities?.fork != null;
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    report.parent = sessionId;
    report.parentStop = (await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "PROMPT-ONE" }],
    })).stopReason;
    const fork = await ctx.request(acp.methods.agent.session.fork, { sessionId, cwd, mcpServers: [] });
    report.fork = fork.sessionId;
    report.forkModes = fork.modes?.availableModes?.length ?? 0;
    report.forkStop = (await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: fork.sessionId,
      prompt: [{ type: "text", text: "PROMPT-TWO" }],
    })).stopReason;
  });
  await connect(async (ctx, _init, updates) => {
    await ctx.request(acp.methods.agent.session.load, { sessionId: report.fork, cwd, mcpServers: [] });
    report.forkPrompts = texts(updates, report.fork, "user_message_chunk");
    report.forkAnswers = texts(updates, report.fork, "agent_message_chunk").join("");
    updates.length = 0;
    await ctx.request(acp.methods.agent.session.load, { sessionId: report.parent, cwd, mcpServers: [] });
    report.parentPrompts = texts(updates, report.parent, "user_message_chunk");
  });
} catch (err) {
  console.error("ACP client failed:", err);
  process.exit(1);
}
clearTimeout(timeout);
console.log(JSON.stringify(report));

// The official TypeScript SDK's client (its experimental tasks API) against an mcpactor
// server over stdio. argv: the server command. Prints one JSON summary on stdout.
import path from "node:path";

const sdkRoot = process.env.MCP_TS_SDK;  // .../node_modules/@modelcontextprotocol/sdk
const load = (p) => import(path.join(sdkRoot, "dist/esm", p));
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { ElicitRequestSchema } = await load("types.js");

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "ignore" });
const client = new Client({ name: "ts-task-client", version: "1.0" },
                          { capabilities: { elicitation: {} } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params._meta?.["io.modelcontextprotocol/related-task"]?.taskId ?? null);
  return { action: "accept", content: { name: "ts" } };
});
await client.connect(transport);
const out = { capabilities: client.getServerCapabilities().tasks };
const tools = await client.listTools();
out.taskSupport = Object.fromEntries(tools.tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));

async function stream(name, args, options) {
  const seen = [];
  let taskId = null;
  for await (const message of client.experimental.tasks.callToolStream(
      { name, arguments: args }, undefined, options)) {
    if (message.type === "taskCreated") { taskId = message.task.taskId; seen.push(["created", message.task.status]); }
    else if (message.type === "taskStatus") seen.push(["status", message.task.status]);
    else if (message.type === "result") seen.push(["result", message.result.content?.[0]?.text ?? null, message.result._meta ?? null]);
    else if (message.type === "error") seen.push(["error", String(message.error?.message ?? message.error)]);
  }
  return { taskId, seen };
}

out.slow = await stream("slow", { n: 2, delay: 0.05 }, { task: { ttl: 60000 } });
out.askName = await stream("ask_name", {});  // required: the SDK makes it a task itself
out.asked = asked;
out.boom = await stream("boom", {}, { task: {} });
// Cancel a running task through the SDK.
const created = await client.request(
  { method: "tools/call", params: { name: "hang", arguments: {}, task: {} } },
  (await load("experimental/tasks/types.js")).CreateTaskResultSchema ?? (await load("types.js")).CreateTaskResultSchema);
out.cancel = await client.experimental.tasks.cancelTask(created.task.taskId);
out.afterCancel = (await client.experimental.tasks.getTask(created.task.taskId)).status;
out.list = (await client.experimental.tasks.listTasks()).tasks.map((t) => t.status);
try {
  await client.experimental.tasks.getTask("no-such-task");
  out.unknown = "no error";
} catch (error) {
  out.unknown = error.code;
}
await client.close();
console.log(JSON.stringify(out));

// The official TypeScript SDK client (@modelcontextprotocol/sdk, from
// scripts/npm-interop.sh) driving an MCP server, for tests/interop/test_ts_sdk_client.py.
//
//   node ts_sdk_client.mjs SDK_DIR http URL
//   node ts_sdk_client.mjs SDK_DIR stdio COMMAND [ARGS...]
//
// It connects (declaring sampling and elicitation, answering both), then runs the
// everything server's tools, a prompt and a resource, and prints one JSON object with
// what came back and the protocol version the SDK negotiated.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, kind, ...rest] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "dist", "esm", p)).href);
const { Client } = await load("client/index.js");
const types = await load("types.js");

const client = new Client(
  { name: "ts-sdk-interop", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {} } },
);
client.setRequestHandler(types.CreateMessageRequestSchema, async (request) => ({
  role: "assistant",
  content: { type: "text", text: `ts sampled: ${request.params.messages.length} message(s)` },
  model: "ts-model",
  stopReason: "endTurn",
}));
client.setRequestHandler(types.ElicitRequestSchema, async () => ({
  action: "accept",
  content: { username: "ts-user", email: "ts@example.com" },
}));

let transport;
if (kind === "http") {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else {
  const { StdioClientTransport } = await load("client/stdio.js");
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "ignore" });
}

// The SDK keeps the negotiated version to itself; it tells a transport that asks.
const out = {};
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => {
  out.protocolVersion = version;
  setVersion?.(version);
};

const text = (result) => result.content.map((c) => c.text ?? `<${c.type}>`).join(" ");
await client.connect(transport);
out.serverName = client.getServerVersion()?.name ?? null;
out.tools = (await client.listTools()).tools.length;
out.simple = text(await client.callTool({ name: "test_simple_text", arguments: {} }));
out.sampling = text(await client.callTool({ name: "test_sampling", arguments: { prompt: "hi" } }));
out.elicitation = text(
  await client.callTool({ name: "test_elicitation", arguments: { message: "who?" } }),
);
const progress = [];
await client.callTool(
  { name: "test_tool_with_progress", arguments: {} },
  undefined,
  { onprogress: (p) => progress.push(p.progress) },
);
out.progress = progress;
out.prompt = (await client.getPrompt({ name: "test_simple_prompt" })).messages.length;
out.resource = (await client.readResource({ uri: "test://static-text" })).contents[0].text;
await client.close();
console.log(JSON.stringify(out));

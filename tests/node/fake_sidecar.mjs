// A tiny stand-in for `python -m codebase_index.rpc` (the sidecar), speaking the same line-delimited JSON-RPC.
// Behaviour is chosen with FAKE_MODE so the client's failure handling can be tested without Python:
//   normal       answer everything
//   hang         read stdin, never answer (not even initialize)
//   hang-search  answer initialize, never answer `search`
//   crash-search answer initialize, exit(5) on `search`
//   locked       answer the first request with -32002 and exit 3 (another sidecar holds the index lock)
// Every message received is appended to FAKE_LOG (one JSON per line) when set.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const mode = process.env.FAKE_MODE ?? "normal";
const log = process.env.FAKE_LOG;
const args = process.argv.slice(2);

function send(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function reply(id, result) {
  send({ jsonrpc: "2.0", id, result });
}

const tools = [
  { name: "codebase_search", method: "search", description: "search", inputSchema: { type: "object", properties: {} } },
  { name: "index_status", method: "status", description: "status", inputSchema: { type: "object", properties: {} } },
  { name: "index_codebase", method: "index", description: "index", inputSchema: { type: "object", properties: {} } },
];

process.stderr.write(`fake sidecar started with ${args.join(" ")}\n`);
process.stdout.write("a stray non-JSON line that the client must ignore\n");

let busyCalls = 0;
const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  if (log) appendFileSync(log, `${JSON.stringify(msg)}\n`);
  if (mode === "hang") return;
  if (msg.id === undefined) return; // notifications
  if (mode === "locked") {
    send({ jsonrpc: "2.0", id: msg.id, error: { code: -32002, message: "sidecar locked by pid 1" } });
    setTimeout(() => process.exit(3), 10);
    return;
  }
  switch (msg.method) {
    case "initialize":
      reply(msg.id, { name: "fake", version: "0.0.1", protocolVersion: 1, tools, index: { args, cwd: process.cwd(), safePath: process.env.PYTHONSAFEPATH ?? null } });
      break;
    case "search":
      if (mode === "hang-search") return;
      if (mode === "crash-search") process.exit(5);
      if (msg.params.query === "slow") {
        // Answer after a later request, to test out-of-order id matching.
        setTimeout(() => reply(msg.id, { text: `slow result`, data: {} }), 150);
        return;
      }
      reply(msg.id, { text: `results for ${msg.params.query} pid=${process.pid}`, data: { params: msg.params } });
      break;
    case "index": {
      const total = 3;
      for (let done = 0; done <= total; done++) {
        send({ jsonrpc: "2.0", method: "$/progress", params: { requestId: msg.id, phase: "chunk", done, total } });
      }
      if (msg.params.wait) return; // answered only by cancellation
      reply(msg.id, { text: "indexed 3 files", data: {} });
      break;
    }
    case "status":
      reply(msg.id, { text: "fake status", data: {} });
      break;
    case "busy":
      busyCalls += 1;
      if (busyCalls <= msg.params.failTimes) {
        send({ jsonrpc: "2.0", id: msg.id, error: { code: -32001, message: "an index run is already in progress" } });
      } else reply(msg.id, { text: `ok after ${busyCalls - 1} busy answers`, data: {} });
      break;
    case "boom":
      send({ jsonrpc: "2.0", id: msg.id, error: { code: -32001, message: "index is locked by another process" } });
      break;
    case "shutdown":
      reply(msg.id, null);
      setTimeout(() => process.exit(0), 10);
      break;
    default:
      send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: `method not found: ${msg.method}` } });
  }
});
rl.on("close", () => process.exit(0));

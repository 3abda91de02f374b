// A scripted OpenAI-compatible chat model on 127.0.0.1 for driving the real OpenCode offline.
//
// `script(request)` decides each reply from the request body: `{ tool: name, args }` streams a tool call,
// `{ text }` streams a plain answer. Requests without tools (title generation and the like) get a short
// text. Every request body is kept in `requests` so a test can check what reached the model.
import { createServer } from "node:http";

function chunk(delta, finish = null) {
  return {
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: "fake-model",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

function sse(res, events) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  for (const event of events) res.write(`data: ${JSON.stringify(event)}\n\n`);
  res.write("data: [DONE]\n\n");
  res.end();
}

function reply(res, stream, answer, callId) {
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (answer.tool) {
    const call = { id: callId, type: "function", function: { name: answer.tool, arguments: JSON.stringify(answer.args ?? {}) } };
    if (!stream) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion", created: 0, model: "fake-model", choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [call] }, finish_reason: "tool_calls" }], usage }));
      return;
    }
    sse(res, [
      chunk({ role: "assistant", content: "" }),
      chunk({ tool_calls: [{ index: 0, ...call }] }),
      { ...chunk({}, "tool_calls"), usage },
    ]);
    return;
  }
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion", created: 0, model: "fake-model", choices: [{ index: 0, message: { role: "assistant", content: answer.text }, finish_reason: "stop" }], usage }));
    return;
  }
  sse(res, [chunk({ role: "assistant", content: "" }), chunk({ content: answer.text }), { ...chunk({}, "stop"), usage }]);
}

/** Text of a chat message whose content may be a string or a list of parts. */
export function messageText(message) {
  if (!message) return "";
  if (typeof message.content === "string") return message.content;
  if (Array.isArray(message.content)) return message.content.map((p) => (typeof p === "string" ? p : p.text ?? "")).join("\n");
  return "";
}

export async function startFakeLlm(script) {
  const requests = [];
  let calls = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (d) => {
      body += d;
    });
    req.on("end", () => {
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      let parsed;
      try {
        parsed = JSON.parse(body);
      } catch {
        res.writeHead(400);
        res.end();
        return;
      }
      requests.push(parsed);
      const hasTools = Array.isArray(parsed.tools) && parsed.tools.length > 0;
      const answer = hasTools ? script(parsed) : { text: "Fake title" };
      reply(res, parsed.stream === true, answer, `call_${++calls}`);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

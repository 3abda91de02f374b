// The plugin against the real Python sidecar (`.venv/bin/python -m codebase_index.rpc`).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { CodebaseIndexPlugin } from "../../plugin/dist/index.js";
import { SidecarClient } from "../../plugin/dist/sidecar.js";
import { isolateUserConfig, tempDir, toolContext, trustProjectFile, VENV_PYTHON, waitFor, writeSampleProject } from "./helpers.mjs";

const hasVenv = existsSync(VENV_PYTHON);
// The sidecar reads the trust record from the same user config folder as the plugin.
const CONFIG_DIR = isolateUserConfig();

async function loadPlugin(t, project, indexDir) {
  const hooks = await CodebaseIndexPlugin(
    { client: {}, project: {}, directory: project, worktree: project, serverUrl: new URL("http://127.0.0.1:1"), $: undefined },
    { pythonPath: VENV_PYTHON, serveArgs: ["--index-dir", indexDir] },
  );
  t.after(() => hooks.dispose());
  return hooks;
}

test("index and search round trip through the plugin tools", { skip: !hasVenv && "no .venv (run make install)" }, async (t) => {
  const project = tempDir(t);
  writeSampleProject(project);
  const hooks = await loadPlugin(t, project, path.join(tempDir(t), "index"));
  const { ctx, updates } = toolContext();

  const indexed = await hooks.tool.index_codebase.execute({}, ctx);
  assert.doesNotMatch(indexed.output, /failed/, indexed.output);
  assert.ok(updates.length > 0, "index progress reached ctx.metadata");
  assert.ok(updates.every((u) => u.title.startsWith("index_codebase: ")));

  const found = await hooks.tool.codebase_search.execute({ query: "invoice total with tax", limit: 3 }, ctx);
  assert.match(found.output, /billing\/invoices\.py/, found.output);
  assert.match(found.output, /compute_invoice_total/, found.output);

  const status = await hooks.tool.index_status.execute({}, ctx);
  assert.doesNotMatch(status.output, /failed/, status.output);

  const bad = await hooks.tool.codebase_search.execute({ query: "x", limit: 999 }, ctx);
  assert.match(bad.output, /^codebase_search failed: invalid arguments: .*limit/, bad.output);
});

test("the real sidecar is restarted after being killed", { skip: !hasVenv && "no .venv (run make install)" }, async (t) => {
  const project = tempDir(t);
  writeSampleProject(project);
  const client = new SidecarClient({
    python: VENV_PYTHON,
    project,
    extraArgs: ["--index-dir", path.join(tempDir(t), "index")],
    backoffBaseMs: 50,
  });
  t.after(() => client.dispose());
  await client.call("index", {});
  const pid = client.pid;
  process.kill(pid, "SIGKILL");
  assert.ok(await waitFor(() => !client.running));
  const result = await client.call("search", { query: "render banner title", limit: 3 }, { retryOnCrash: true });
  assert.match(result.text, /render\.ts/);
  assert.notEqual(client.pid, pid);
  assert.equal(client.starts, 2);

  // Measured, not asserted: warm search round trips through the plugin's client.
  const times = [];
  for (let i = 0; i < 200; i++) {
    const start = process.hrtime.bigint();
    // Distinct queries, so no answer can come from a result cache.
    const words = ["invoice total", "render banner", "tax rate", "shop readme", "line price quantity"];
    await client.call("search", { query: `${words[i % words.length]} q${i}`, limit: 5 });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  const pct = (p) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))].toFixed(2);
  t.diagnostic(`warm search round trip over 200 queries: p50 ${pct(50)} ms, p95 ${pct(95)} ms, max ${pct(100)} ms`);
});

/** An OpenAI-compatible embedding server on 127.0.0.1: deterministic 8-dimensional vectors per text. */
async function embeddingServer(t) {
  const { createServer } = await import("node:http");
  const { createHash } = await import("node:crypto");
  const vector = (text) => [...createHash("sha256").update(text).digest().subarray(0, 8)].map((b) => b - 127.5);
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const input = JSON.parse(body).input;
      const texts = Array.isArray(input) ? input : [input];
      const data = texts.map((text, index) => ({ object: "embedding", index, embedding: vector(text) }));
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ object: "list", data }));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const close = () => new Promise((resolve) => server.close(resolve));
  t.after(() => server.listening && close());
  server.closeAllConnections?.();
  return { url: `http://127.0.0.1:${server.address().port}`, close: async () => {
    server.closeAllConnections?.();
    await close();
  } };
}

test(
  "search through the plugin answers keyword results with a note once the embedding provider's port is closed",
  { skip: !hasVenv && "no .venv (run make install)" },
  async (t) => {
    const project = tempDir(t);
    writeSampleProject(project);
    const provider = await embeddingServer(t);
    mkdirSync(path.join(project, ".opencode"), { recursive: true });
    writeFileSync(
      path.join(project, ".opencode", "codebase-index.json"),
      JSON.stringify({
        embeddingProvider: "custom",
        customProvider: { baseUrl: provider.url, model: "fake", dimensions: 8, requestIntervalMs: 0 },
      }),
    );
    // A remote provider is used only from a project file the user trusted.
    trustProjectFile(CONFIG_DIR, project);
    const hooks = await loadPlugin(t, project, path.join(tempDir(t), "index"));
    const { ctx } = toolContext();
    await hooks.tool.index_codebase.execute({}, ctx);
    // The sidecar embeds in the background; wait until every chunk has its vector.
    let status = "";
    const embedded = await waitFor(
      async () => {
        status = (await hooks.tool.index_status.execute({}, ctx)).output;
        return /embeddings: (\d+)\/\1 chunks \(100%\)/.test(status) && !/embedding now/.test(status);
      },
      { timeoutMs: 60_000, stepMs: 200 },
    );
    assert.ok(embedded, status);
    const hybrid = await hooks.tool.codebase_search.execute({ query: "invoice total with tax", limit: 3 }, ctx);
    assert.doesNotMatch(hybrid.output, /^note:/, hybrid.output);

    await provider.close(); // the port is closed now: connections are refused
    // Another query (a repeated one is answered from the sidecar's query-vector cache).
    const found = await hooks.tool.codebase_search.execute({ query: "invoice sum and tax", limit: 3 }, ctx);
    assert.match(found.output, /^note: keyword results only: the embedding provider failed \(could not connect/, found.output);
    assert.match(found.output, /billing\/invoices\.py/, found.output);
    assert.doesNotMatch(found.output, /failed:|internal error/i, found.output);
  },
);

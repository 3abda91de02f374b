// The plugin as OpenCode sees it: exported surface, tools and their schemas, commands, events, failures.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { tool } from "@opencode-ai/plugin";

import * as entry from "../../plugin/dist/index.js";
import { TOOL_DEFINITIONS } from "../../plugin/dist/generated/tools.js";
import { fakePython, isolateUserConfig, received, REPO, tempDir, toolContext, trustProjectFile, waitFor } from "./helpers.mjs";

const z = tool.schema;
const CONFIG_DIR = isolateUserConfig();
const { CodebaseIndexPlugin } = entry;

async function load(t, options = {}, project = tempDir(t)) {
  const hooks = await CodebaseIndexPlugin({ client: {}, project: {}, directory: project, worktree: project, serverUrl: new URL("http://127.0.0.1:1"), $: undefined }, options);
  t.after(() => hooks.dispose?.());
  return { hooks, project };
}

test("the entry module exports exactly one function, the plugin", () => {
  const functions = Object.entries(entry).filter(([, v]) => typeof v === "function").map(([k]) => k);
  assert.deepEqual(functions, ["CodebaseIndexPlugin"]);
});

test("registers every generated tool with the generated argument schema, without starting anything", async (t) => {
  const dir = tempDir(t);
  const log = path.join(dir, "log.jsonl");
  const { hooks } = await load(t, { pythonPath: fakePython(dir, "normal", log) });
  const names = Object.keys(hooks.tool).sort();
  assert.deepEqual(names, TOOL_DEFINITIONS.map((d) => d.name).sort());
  for (const required of ["codebase_search", "codebase_peek", "index_codebase", "index_status", "index_health_check", "index_metrics", "index_logs"]) {
    assert.ok(names.includes(required), required);
  }
  for (const def of TOOL_DEFINITIONS) {
    const registered = hooks.tool[def.name];
    assert.equal(registered.description, def.description);
    const schema = z.toJSONSchema(z.object(registered.args));
    assert.deepEqual(Object.keys(schema.properties).sort(), Object.keys(def.inputSchema.properties).sort(), def.name);
    assert.deepEqual((schema.required ?? []).sort(), (def.inputSchema.required ?? []).sort(), def.name);
    for (const [key, prop] of Object.entries(def.inputSchema.properties)) {
      const got = schema.properties[key];
      if (prop.type !== undefined) assert.equal(got.type, prop.type, `${def.name}.${key} type`);
      assert.deepEqual(got.enum, prop.enum, `${def.name}.${key} enum`);
      assert.equal(got.minimum, prop.minimum, `${def.name}.${key} minimum`);
      assert.equal(got.maximum, prop.maximum, `${def.name}.${key} maximum`);
    }
  }
  const search = z.object(hooks.tool.codebase_search.args);
  assert.equal(search.safeParse({}).success, false, "query is required");
  assert.equal(search.safeParse({ query: "x", limit: 0 }).success, false, "limit has a minimum");
  assert.equal(search.safeParse({ query: "x", limit: 5, fileType: "py" }).success, true);
  assert.deepEqual(received(log), [], "loading the plugin must not start the sidecar");
});

test("the config hook registers the slash commands and the skill folder without overriding the user's", async (t) => {
  const { hooks } = await load(t);
  const cfg = { command: { status: { template: "mine", description: "user status" } } };
  await hooks.config(cfg);
  for (const name of ["index", "search", "find"]) {
    assert.ok(cfg.command[name].description, `${name} has a description`);
    assert.match(cfg.command[name].template, /\$ARGUMENTS/, `${name} uses $ARGUMENTS`);
    assert.doesNotMatch(cfg.command[name].template, /^---/, `${name} has its frontmatter stripped`);
  }
  assert.match(cfg.command.find.template, /codebase_search/);
  assert.match(cfg.command.find.template, /grep/);
  assert.match(cfg.command.index.template, /index_codebase/);
  assert.match(cfg.command.search.template, /limit=N/);
  assert.equal(cfg.command.status.template, "mine");
  const fresh = { skills: { paths: ["/elsewhere"] } };
  await hooks.config(fresh);
  assert.match(fresh.command.status.template, /index_status/);
  assert.deepEqual(fresh.skills.paths, ["/elsewhere", path.join(REPO, "skill")]);
  await hooks.config(fresh);
  assert.equal(fresh.skills.paths.length, 2, "registered once");
});

test("a tool call starts the sidecar, returns its text and shows progress", async (t) => {
  const dir = tempDir(t);
  const { hooks, project } = await load(t, { pythonPath: fakePython(dir) });
  const { ctx, updates } = toolContext();
  const out = await hooks.tool.codebase_search.execute({ query: "hello", limit: 3, fileType: undefined }, ctx);
  assert.match(out.output, /^results for hello pid=\d+$/);
  assert.equal(out.title, "codebase_search: hello");
  const indexed = await hooks.tool.index_codebase.execute({ force: true }, ctx);
  assert.equal(indexed.output, "indexed 3 files");
  assert.deepEqual(updates.map((u) => u.title), [0, 1, 2, 3].map((n) => `index_codebase: chunk ${n}/3`));
  assert.deepEqual(updates.at(-1).metadata, { phase: "chunk", done: 3, total: 3 });
  assert.ok(project);
});

test("events are forwarded only while the sidecar runs, batched into one filesChanged", async (t) => {
  const dir = tempDir(t);
  const log = path.join(dir, "log.jsonl");
  const { hooks } = await load(t, { pythonPath: fakePython(dir, "normal", log) });
  await hooks.event({ event: { type: "file.edited", properties: { file: "/p/early.py" } } });
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(received(log), [], "an event must not start the sidecar");

  await hooks.tool.index_status.execute({}, toolContext().ctx);
  await hooks.event({ event: { type: "file.edited", properties: { file: "/p/a.py" } } });
  await hooks.event({ event: { type: "file.watcher.updated", properties: { file: "/p/b.py", event: "unlink" } } });
  await hooks.event({ event: { type: "vcs.branch.updated", properties: { branch: "feature" } } });
  await hooks.event({ event: { type: "session.idle", properties: { sessionID: "s" } } });
  assert.ok(await waitFor(() => received(log).some((m) => m.method === "notify/filesChanged")));
  const notes = received(log).filter((m) => m.method?.startsWith("notify/"));
  assert.deepEqual(notes.map((m) => [m.method, m.params]), [
    ["notify/branchChanged", { branch: "feature" }],
    ["notify/filesChanged", { paths: ["/p/a.py", "/p/b.py"] }],
  ]);
});

test("a missing Python becomes a readable tool output naming the fix", async (t) => {
  const dir = tempDir(t);
  const { hooks } = await load(t, { pythonPath: path.join(dir, "missing", "python3") });
  const out = await hooks.tool.codebase_search.execute({ query: "x" }, toolContext().ctx);
  assert.match(out.output, /^codebase_search failed: could not start the codebase-index sidecar: Python interpreter not found/);
  assert.match(out.output, /pythonPath/);
  assert.doesNotMatch(out.output, /\n\s+at /, "no stack trace");
  assert.equal(out.metadata.error, "spawn");
});

test("a hung sidecar becomes a readable timeout, and pythonPath can come from a trusted .opencode/codebase-index.json", async (t) => {
  const dir = tempDir(t);
  const project = tempDir(t);
  mkdirSync(path.join(project, ".opencode"));
  writeFileSync(
    path.join(project, ".opencode", "codebase-index.json"),
    // JSONC, as the engine accepts it: a comment and trailing commas must not lose pythonPath.
    `{\n  // the interpreter for this project\n  "pythonPath": ${JSON.stringify(fakePython(dir, "hang-search"))},\n  "timeouts": { "search": 300, },\n}\n`,
  );
  trustProjectFile(CONFIG_DIR, project);
  const { hooks } = await load(t, {}, project);
  const out = await hooks.tool.codebase_search.execute({ query: "x" }, toolContext().ctx);
  assert.match(out.output, /^codebase_search failed: the codebase-index sidecar did not answer `search` within 300ms/);
  assert.equal(out.metadata.error, "timeout");
  const status = await hooks.tool.index_status.execute({}, toolContext().ctx);
  assert.equal(status.output, "fake status", "the next call gets a fresh sidecar");
});

test("a settings file the plugin cannot parse is reported on every call until it is fixed", async (t) => {
  const dir = tempDir(t);
  const project = tempDir(t);
  mkdirSync(path.join(project, ".opencode"));
  const file = path.join(project, ".opencode", "codebase-index.json");
  writeFileSync(file, `{ "pythonPath": ${JSON.stringify(fakePython(dir))} "timeouts": {} }`);
  const { hooks } = await load(t, {}, project);
  for (let i = 0; i < 2; i++) {
    const out = await hooks.tool.index_status.execute({}, toolContext().ctx);
    assert.match(out.output, /^index_status failed: \.opencode\/codebase-index\.json: invalid JSON: /);
    assert.equal(out.metadata.error, "config");
  }
  writeFileSync(file, `{ "pythonPath": ${JSON.stringify(fakePython(dir))}, /* fixed */ }`);
  trustProjectFile(CONFIG_DIR, project);
  const fixed = await hooks.tool.index_status.execute({}, toolContext().ctx);
  assert.equal(fixed.output, "fake status");
});

test("a tool the running sidecar does not offer says so instead of calling it", async (t) => {
  const dir = tempDir(t);
  const { hooks } = await load(t, { pythonPath: fakePython(dir) });
  const out = await hooks.tool.index_logs.execute({}, toolContext().ctx);
  assert.match(out.output, /^index_logs is not available: the running codebase-index sidecar \(fake 0\.0\.1\) does not offer it/);
});

// Pure pieces: settings parsing, interpreter choice, command files, JSON Schema -> zod.
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { tool } from "@opencode-ai/plugin";

import { loadCommands, parseCommandMarkdown } from "../../plugin/dist/commands.js";
import { choosePython, parseSettings, readProjectSettings, stripJsonc, venvHasCodebaseIndex } from "../../plugin/dist/config.js";
import { argsShape } from "../../plugin/dist/schema.js";
import { REPO, tempDir } from "./helpers.mjs";

const z = tool.schema;

test("parseSettings keeps only well-typed values", () => {
  assert.deepEqual(parseSettings({ pythonPath: " /x/python ", timeouts: { search: 5, index: "no", peek: -1 }, backoffCapMs: 100, serveArgs: ["--a"], junk: 1 }), {
    pythonPath: "/x/python",
    timeouts: { search: 5 },
    backoffCapMs: 100,
    serveArgs: ["--a"],
  });
  assert.deepEqual(parseSettings(undefined), {});
  assert.deepEqual(parseSettings({ serveArgs: [1] }), {});
});

test("stripJsonc reads the settings file like the engine's strip_jsonc", (t) => {
  // Same input and output as the doctest of codebase_index.config.strip_jsonc.
  assert.equal(stripJsonc('{"a": "//x", /* c */ "b": [1,], // end\n}'), '{"a": "//x",         "b": [1 ]        \n}');
  assert.deepEqual(JSON.parse(stripJsonc('{"u": "http://h/*x*/", "s": "a,]",}')), { u: "http://h/*x*/", s: "a,]" });
  assert.throws(() => stripJsonc('{\n"a": 1 /* open'), /line 2: unterminated \/\* comment/);
  const project = tempDir(t);
  const env = { XDG_CONFIG_HOME: path.join(project, "no-config") };
  assert.deepEqual(readProjectSettings(project, env), { settings: {}, trusted: false, withheld: [] }, "no file is no settings, not an error");
  mkdirSync(path.join(project, ".opencode"));
  writeFileSync(path.join(project, ".opencode", "codebase-index.json"), '{\n  // local venv\n  "pythonPath": "/v/bin/python",\n  "backoffCapMs": 9,\n}');
  assert.deepEqual(readProjectSettings(project, env), { settings: { backoffCapMs: 9 }, trusted: false, withheld: ["pythonPath"] }, "untrusted: pythonPath withheld");
  writeFileSync(path.join(project, ".opencode", "codebase-index.json"), "[1]");
  assert.match(readProjectSettings(project, env).error, /top level must be an object/);
});

test("choosePython follows option > env > (trusted) project file > user file > the clone's venv with the package > engine set-up", () => {
  const base = { project: "/proj", pluginRepo: "/repo", options: {}, projectSettings: {}, env: {}, exists: () => true, hasPackage: () => true };
  assert.deepEqual(choosePython({ ...base, options: { pythonPath: "/opt/py" }, env: { CODEBASE_INDEX_PYTHON: "/env/py" } }), { python: "/opt/py", source: "plugin option pythonPath" });
  assert.equal(choosePython({ ...base, env: { CODEBASE_INDEX_PYTHON: "/env/py" }, projectSettings: { pythonPath: "/file/py" } }).python, "/env/py");
  assert.equal(choosePython({ ...base, projectSettings: { pythonPath: "tools/venv/bin/python" } }).python, "/proj/tools/venv/bin/python");
  assert.equal(choosePython({ ...base, projectSettings: { pythonPath: "python3.12" } }).python, "python3.12");
  assert.equal(choosePython({ ...base, projectSettings: { pythonPath: "/file/py" }, userSettings: { pythonPath: "/user/py" } }).python, "/file/py");
  assert.equal(choosePython({ ...base, userSettings: { pythonPath: "/user/py" } }).python, "/user/py");
  assert.equal(choosePython(base).python, "/repo/.venv/bin/python", "never the project's own .venv");
  assert.equal(choosePython({ ...base, hasPackage: (venv) => venv === "/proj/.venv" }).bootstrap, true);
  assert.equal(choosePython({ ...base, exists: () => false }).bootstrap, true, "nothing found: set up the engine environment");
});

test("venvHasCodebaseIndex looks for the installed distribution", (t) => {
  const dir = tempDir(t);
  const site = path.join(dir, "lib", "python3.12", "site-packages");
  mkdirSync(site, { recursive: true });
  assert.equal(venvHasCodebaseIndex(dir), false);
  writeFileSync(path.join(site, "__editable__.local_codebase_index-0.1.0.pth"), "/src\n");
  assert.equal(venvHasCodebaseIndex(dir), true, "an editable install of the local-codebase-index distribution");
  rmSync(path.join(site, "__editable__.local_codebase_index-0.1.0.pth"));
  mkdirSync(path.join(site, "local_codebase_index-0.1.0.dist-info"));
  assert.equal(venvHasCodebaseIndex(dir), true);
  assert.equal(venvHasCodebaseIndex(path.join(dir, "nope")), false);
  assert.equal(venvHasCodebaseIndex(path.join(REPO, ".venv")), true, "the repository's own venv has it (make install)");
});

test("command markdown: frontmatter fields and body", () => {
  const spec = parseCommandMarkdown('---\ndescription: "Do it: now"\nagent: build\nsubtask: true\n---\nRun $ARGUMENTS\n');
  assert.deepEqual(spec, { template: "Run $ARGUMENTS", description: "Do it: now", agent: "build", subtask: true });
  assert.deepEqual(parseCommandMarkdown("just a body\n"), { template: "just a body" });
});

test("loadCommands reads *.md and skips empty or missing folders", (t) => {
  const dir = tempDir(t);
  writeFileSync(path.join(dir, "a.md"), "---\ndescription: A\n---\nbody a\n");
  writeFileSync(path.join(dir, "empty.md"), "---\ndescription: nothing\n---\n");
  writeFileSync(path.join(dir, "notes.txt"), "ignored");
  assert.deepEqual(loadCommands(dir), { a: { template: "body a", description: "A" } });
  assert.deepEqual(loadCommands(path.join(dir, "missing")), {});
  assert.deepEqual(Object.keys(loadCommands(path.join(REPO, "commands"))).sort(), ["call-graph", "find", "impact", "index", "search", "status"]);
});

test("argsShape turns JSON Schema into equivalent zod", () => {
  const schema = {
    type: "object",
    properties: {
      query: { type: "string", minLength: 1, description: "q" },
      limit: { type: "integer", minimum: 1, maximum: 5, default: 2 },
      mode: { type: "string", enum: ["a", "b"] },
      tags: { type: "array", items: { type: "string" } },
      ratio: { anyOf: [{ type: "number" }, { type: "null" }] },
      flag: { type: "boolean" },
    },
    required: ["query"],
  };
  const shape = z.object(argsShape(schema));
  const json = z.toJSONSchema(shape);
  assert.deepEqual(json.required, ["query"]);
  assert.equal(json.properties.query.description, "q");
  assert.equal(json.properties.limit.type, "integer");
  assert.equal(json.properties.limit.default, 2);
  assert.deepEqual(json.properties.mode.enum, ["a", "b"]);
  assert.equal(shape.safeParse({ query: "x", limit: 3, mode: "a", tags: ["t"], ratio: null, flag: true }).success, true);
  assert.equal(shape.safeParse({ query: "x", limit: 6 }).success, false);
  assert.equal(shape.safeParse({ query: "x", limit: 1.5 }).success, false);
  assert.equal(shape.safeParse({ query: "x", mode: "c" }).success, false);
  assert.equal(shape.safeParse({ query: "" }).success, false);
  assert.deepEqual(argsShape({ type: "object" }), {});
});

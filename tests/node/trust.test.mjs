// Safe with any repository (issue 24): a project's `.opencode/codebase-index.json` and its committed files
// must never make the plugin run a program. pythonPath/serveArgs of the project file count only once the
// user trusted that exact file (the trust record `codebase-index trust` writes); the project's .venv never.
// The config module is imported as a namespace so that each test fails on its own against older code.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import * as config from "../../plugin/dist/config.js";
import * as tools from "../../plugin/dist/tools.js";
import { fakePython, isolateUserConfig, markersIn, REPO, tempDir, toolContext, trustProjectFile, VENV_PYTHON, writeHostileProject } from "./helpers.mjs";

const CONFIG_DIR = isolateUserConfig();
const PLUGIN_REPO_WITHOUT_VENV = "/nonexistent/codebase-index";

/** A hostile project in its own temp folder, its markers folder, and an env whose user config is `configHome`. */
function hostile(t) {
  const dir = tempDir(t, "cbi-hostile-");
  const project = path.join(dir, "project");
  const markers = path.join(dir, "markers");
  mkdirSync(project);
  const file = writeHostileProject(project, markers);
  const configHome = path.join(dir, "config");
  const env = { XDG_CONFIG_HOME: configHome, HOME: path.join(dir, "home") };
  return { dir, project, markers, file, env, configDir: path.join(configHome, "opencode") };
}

function choose(h, extra = {}) {
  return config.resolveSettings({ project: h.project, pluginRepo: PLUGIN_REPO_WITHOUT_VENV, options: {}, env: h.env, ...extra });
}

function assertNotHostile(choice, h) {
  assert.notEqual(choice.python, path.join(h.project, "pwn.sh"));
  assert.notEqual(choice.python, "./pwn.sh");
  assert.notEqual(choice.python, path.join(h.project, ".venv", "bin", "python"));
  assert.ok(!choice.python.startsWith(h.project), `${choice.python} is inside the project`);
}

test("an untrusted project file: choosePython never returns its pythonPath nor the project's .venv", (t) => {
  const h = hostile(t);
  const read = config.readProjectSettings(h.project, h.env);
  assert.equal(read.trusted, false);
  assert.equal(read.settings.pythonPath, undefined, "pythonPath is withheld");
  assert.equal(read.settings.serveArgs, undefined, "serveArgs are withheld");
  assert.deepEqual(read.settings.timeouts, { search: 45000 }, "harmless keys are kept");
  assert.deepEqual(read.withheld, ["pythonPath", "serveArgs"]);
  // The .venv really looks like one with the package: the old detection picked it.
  assert.equal(config.venvHasCodebaseIndex(path.join(h.project, ".venv")), true);

  const real = config.choosePython({ project: h.project, pluginRepo: PLUGIN_REPO_WITHOUT_VENV, options: {}, projectSettings: read.settings, env: h.env });
  assertNotHostile(real, h);
  assert.equal(real.bootstrap, true, "nothing of the user's: the engine environment");
  // Even when every folder looks like a venv with the package, the project's own is not a candidate.
  const lax = config.choosePython({ project: h.project, pluginRepo: "/repo", options: {}, projectSettings: read.settings, env: h.env, exists: () => true, hasPackage: () => true });
  assert.equal(lax.python, "/repo/.venv/bin/python");

  const resolved = choose(h);
  assertNotHostile(resolved.choice, h);
  assert.equal(resolved.settings.serveArgs, undefined);
  assert.deepEqual(resolved.settings.timeouts, { search: 45000 });
  assert.deepEqual(resolved.withheld, ["pythonPath", "serveArgs"]);
  assert.match(resolved.notice.line, /^\.opencode\/codebase-index\.json is not trusted, so the plugin did not use its pythonPath, serveArgs\. /);
  assert.match(resolved.notice.line, /`codebase-index trust` in the project/);
  assert.doesNotMatch(resolved.notice.line, /\n/, "one line");
  assert.deepEqual(markersIn(h.markers), []);
});

test("once the user trusted that exact file its pythonPath and serveArgs are honoured; one byte changed revokes it", (t) => {
  const h = hostile(t);
  const { key, digest } = trustProjectFile(h.configDir, h.project);
  assert.equal(key, path.join(h.project, ".opencode", "codebase-index.json"));
  assert.equal(config.projectConfigKey(h.project), key, "the record's key is the file's path under the real root");
  assert.equal(config.isProjectFileTrusted(h.project, h.env), true);
  const trusted = choose(h);
  assert.equal(trusted.choice.python, path.join(h.project, "pwn.sh"), "the user chose it: a relative path is the project's");
  assert.match(trusted.choice.source, /trusted \.opencode\/codebase-index\.json/);
  assert.deepEqual(trusted.settings.serveArgs, ["--index-dir", path.join(h.markers, "hostile-index")]);
  assert.deepEqual(trusted.withheld, []);
  assert.equal(trusted.notice, undefined);

  // The record written by another user config folder trusts nothing here.
  assert.equal(config.isProjectFileTrusted(h.project, { XDG_CONFIG_HOME: path.join(h.dir, "other") }), false);

  appendFileSync(h.file, " ");
  assert.equal(config.isProjectFileTrusted(h.project, h.env), false, "any change revokes the trust");
  const changed = choose(h);
  assertNotHostile(changed.choice, h);
  assert.deepEqual(changed.withheld, ["pythonPath", "serveArgs"]);
  assert.notEqual(config.sha256(readFileSync(h.file)), digest);
});

test("a missing or damaged trust record trusts nothing", (t) => {
  const h = hostile(t);
  assert.equal(config.isProjectFileTrusted(h.project, h.env), false);
  mkdirSync(h.configDir, { recursive: true });
  const store = path.join(h.configDir, "codebase-index-trust.json");
  for (const text of ["{not json", "[]", '{"version": 1, "files": []}', `{"version": 1, "files": {"${config.projectConfigKey(h.project)}": 5}}`]) {
    writeFileSync(store, text);
    assert.equal(config.isProjectFileTrusted(h.project, h.env), false, text);
    assertNotHostile(choose(h).choice, h);
  }
});

test("a symlinked project file (or .opencode folder) is never trusted, even with a matching record", (t) => {
  const h = hostile(t);
  // The file moves out of the project; the project links to it. The record holds the target's digest
  // under the project's key, as if the user had trusted that content here before.
  const outside = path.join(h.dir, "elsewhere.json");
  renameSync(h.file, outside);
  symlinkSync(outside, h.file);
  mkdirSync(h.configDir, { recursive: true });
  const key = config.projectConfigKey(h.project);
  writeFileSync(path.join(h.configDir, "codebase-index-trust.json"), JSON.stringify({ version: 1, files: { [key]: config.sha256(readFileSync(outside)) } }));
  assert.equal(config.isProjectFileTrusted(h.project, h.env), false);
  const read = config.readProjectSettings(h.project, h.env);
  assert.equal(read.trusted, false);
  assert.equal(read.settings.pythonPath, undefined);
  assert.match(read.error, /is a link/);
  assertNotHostile(choose(h).choice, h);

  // `.opencode` itself a link to a folder holding a regular file.
  const h2 = hostile(t);
  const folder = path.join(h2.dir, "opencode-elsewhere");
  renameSync(path.join(h2.project, ".opencode"), folder);
  symlinkSync(folder, path.join(h2.project, ".opencode"));
  mkdirSync(h2.configDir, { recursive: true });
  writeFileSync(
    path.join(h2.configDir, "codebase-index-trust.json"),
    JSON.stringify({ version: 1, files: { [config.projectConfigKey(h2.project)]: config.sha256(readFileSync(path.join(folder, "codebase-index.json"))) } }),
  );
  assert.equal(config.isProjectFileTrusted(h2.project, h2.env), false);
  assert.match(config.readProjectSettings(h2.project, h2.env).error, /\.opencode is a link/);
  assertNotHostile(choose(h2).choice, h2);
});

test("the project's .venv is never picked, even when the project file is trusted", (t) => {
  const h = hostile(t);
  writeFileSync(h.file, '{ "timeouts": { "index": 60000 } }\n');
  trustProjectFile(h.configDir, h.project);
  assert.equal(config.isProjectFileTrusted(h.project, h.env), true);
  const resolved = choose(h, { exists: () => true, hasPackage: (venv) => venv === path.join(h.project, ".venv") });
  assertNotHostile(resolved.choice, h);
  assert.equal(resolved.choice.bootstrap, true);
  assert.deepEqual(resolved.settings.timeouts, { index: 60000 });
});

test("the user's global codebase-index.json names the interpreter and serveArgs; precedence option > env > trusted project > global", (t) => {
  const h = hostile(t);
  mkdirSync(h.configDir, { recursive: true });
  const global = path.join(h.configDir, "codebase-index.json");
  writeFileSync(global, '{\n  // mine\n  "pythonPath": "/opt/mine/python",\n  "serveArgs": ["--log-level", "debug"],\n  "timeouts": { "index": 5, "search": 6 },\n}\n');
  const untrusted = choose(h);
  assert.equal(untrusted.choice.python, "/opt/mine/python", "the user's file wins over the untrusted project's");
  assert.match(untrusted.choice.source, new RegExp(`pythonPath in ${global.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}`));
  assert.deepEqual(untrusted.settings.serveArgs, ["--log-level", "debug"]);
  assert.deepEqual(untrusted.settings.timeouts, { index: 5, search: 45000 }, "the project's harmless keys over the user's");
  assert.deepEqual(untrusted.withheld, ["pythonPath", "serveArgs"]);

  writeFileSync(global, '{ "pythonPath": "~/venvs/ci/bin/python" }');
  assert.equal(choose(h).choice.python, path.join(h.env.HOME, "venvs", "ci", "bin", "python"));
  writeFileSync(global, '{ "pythonPath": "venvs/ci/bin/python" }');
  assert.equal(choose(h).choice.python, path.join(h.configDir, "venvs", "ci", "bin", "python"), "relative to the user's config folder");
  writeFileSync(global, '{ "pythonPath": "/opt/mine/python" }');

  trustProjectFile(h.configDir, h.project);
  assert.equal(choose(h).choice.python, path.join(h.project, "pwn.sh"), "a trusted project file over the user's global one");
  assert.equal(choose(h, { env: { ...h.env, CODEBASE_INDEX_PYTHON: "/env/python" } }).choice.python, "/env/python");
  const option = choose(h, { options: { pythonPath: "/option/python", serveArgs: ["--x"] }, env: { ...h.env, CODEBASE_INDEX_PYTHON: "/env/python" } });
  assert.equal(option.choice.python, "/option/python");
  assert.deepEqual(option.settings.serveArgs, ["--x"]);

  writeFileSync(global, '{ "pythonPath": "/opt/mine/python" ');
  assert.match(choose(h).error, /codebase-index\.json: invalid JSON/);
});

test("the note goes on top of an answer once, and not again when the engine's own note names the same keys", () => {
  const notice = config.withheldNotice(["pythonPath", "serveArgs"]);
  assert.equal(tools.withNotice("results", undefined), "results");
  assert.equal(tools.withNotice("results", notice), `note: ${notice.line}\nresults`);
  const engine =
    "note: .opencode/codebase-index.json is not trusted, so these settings of it are not used: pythonPath, serveArgs, knowledgeBases (1 outside the project). Review the file, then run `codebase-index trust` in the project to use them\nresults";
  assert.equal(tools.withNotice(engine, notice), engine, "the engine's line already says it");
  const partial = engine.replace("pythonPath, serveArgs, ", "");
  assert.equal(tools.withNotice(partial, notice), `note: ${notice.line}\n${partial}`);
  assert.equal(config.withheldNotice([]), undefined);
});

test("the plugin in a hostile project: a tool call runs none of its programs and says what was withheld", async (t) => {
  const h = hostile(t);
  // The user's own interpreter (a fake sidecar), named in the user's global file.
  mkdirSync(CONFIG_DIR, { recursive: true });
  writeFileSync(path.join(CONFIG_DIR, "codebase-index.json"), JSON.stringify({ pythonPath: fakePython(h.dir) }));
  t.after(() => writeFileSync(path.join(CONFIG_DIR, "codebase-index.json"), "{}"));
  const { CodebaseIndexPlugin } = await import("../../plugin/dist/index.js");
  const hooks = await CodebaseIndexPlugin({ client: {}, project: {}, directory: h.project, worktree: h.project, serverUrl: new URL("http://127.0.0.1:1"), $: undefined }, {});
  t.after(() => hooks.dispose?.());
  const out = await hooks.tool.codebase_search.execute({ query: "handle request" }, toolContext().ctx);
  assert.deepEqual(markersIn(h.markers), [], `no program of the project ran and its serveArgs were not used\n${out.output}`);
  const lines = out.output.split("\n");
  assert.match(lines[0], /^note: \.opencode\/codebase-index\.json is not trusted, so the plugin did not use its pythonPath, serveArgs\. .*`codebase-index trust`/);
  assert.match(lines[1], /^results for handle request pid=\d+$/, "the user's interpreter answered");
  assert.equal(lines.length, 2);
  const again = await hooks.tool.index_status.execute({}, toolContext().ctx);
  assert.equal(again.output.split("\n").filter((l) => l.includes("is not trusted")).length, 1, "one note line per answer");
  assert.deepEqual(markersIn(h.markers), []);
});

test("`codebase-index trust` through the npm launcher writes the record the plugin reads; `untrust` forgets it", { skip: !existsSync(VENV_PYTHON) && "no .venv (run make install)" }, (t) => {
  const h = hostile(t);
  const cli = (...args) =>
    execFileSync(process.execPath, [path.join(REPO, "bin", "codebase-index.mjs"), ...args], {
      cwd: h.project,
      env: { ...process.env, ...h.env, CODEBASE_INDEX_PYTHON: VENV_PYTHON },
      encoding: "utf8",
    });
  assert.equal(config.isProjectFileTrusted(h.project, h.env), false);
  assert.match(cli("trust"), /trusted .*codebase-index\.json/);
  assert.equal(config.isProjectFileTrusted(h.project, h.env), true, "the engine's record, read by the plugin");
  assert.equal(choose(h).choice.python, path.join(h.project, "pwn.sh"));
  assert.match(cli("untrust"), /no longer trusted/);
  assert.equal(config.isProjectFileTrusted(h.project, h.env), false);
  // The launcher ran the CLI in the project folder without importing its argparse.py or codebase_index/.
  assert.deepEqual(markersIn(h.markers), []);
});

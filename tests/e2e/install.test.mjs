// Install like a user, with npm: `npm pack` this repository, install the tarball with its dependencies from
// the registry, name the package in opencode.json, and drive the real OpenCode binary offline (scripted
// model on 127.0.0.1). The first codebase_search must set up the Python engine by itself (a fresh per-user
// virtualenv from the package registry) and answer with a real file and symbol; later starts reuse it.
//
// Where the tarball goes: OpenCode installs a plugin named in opencode.json with its own npm step into
// <cache>/opencode/packages/<name>@latest/ and loads it from there. The package is not published, so the
// test installs the tarball into that folder with npm (the step OpenCode would run against the registry)
// and OpenCode finds it installed, resolving the name exactly as it does for a published plugin.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { REPO, tempDir, VENV_PYTHON, writeSampleProject } from "../node/helpers.mjs";
import { messageText, startFakeLlm } from "./fake_llm.mjs";
import { opencodeEnv } from "./opencode_env.mjs";

const OPENCODE = path.join(REPO, "node_modules", ".bin", "opencode");
const PACKAGE = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8"));
const ready = existsSync(OPENCODE) && existsSync(VENV_PYTHON) && existsSync(path.join(REPO, "plugin", "dist", "index.js"));

function run(command, args, { cwd, env, timeoutMs = 120_000 }) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${command} ${args.join(" ")} timed out\nstdout:\n${stdout.slice(-3000)}\nstderr:\n${stderr.slice(-4000)}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function script(request) {
  const tools = request.messages.filter((m) => m.role === "tool");
  if (tools.length === 0) return { tool: "codebase_search", args: { query: "invoice total with tax", limit: 3 } };
  return { text: `FINAL ANSWER\n${messageText(request.messages.at(-1))}` };
}

describe("npm install of the packed plugin", { skip: !ready && "needs make node" }, () => {
  let llm;
  let project;
  let env;
  let installed;
  const cleanups = [];
  const scope = { after: (fn) => cleanups.push(fn) };

  before(async () => {
    llm = await startFakeLlm(script);
    const home = tempDir(scope, "cbi-install-home-");
    project = tempDir(scope, "cbi-install-project-");
    const packs = tempDir(scope, "cbi-install-pack-");
    for (const dir of [".config/opencode", ".local/share", ".cache", ".local/state", "tmp"]) mkdirSync(path.join(home, dir), { recursive: true });

    // 1. npm pack: only the whitelisted files.
    const packed = JSON.parse(execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", packs], { cwd: REPO, encoding: "utf8" }));
    const files = packed[0].files.map((f) => f.path);
    for (const must of ["plugin/dist/index.js", "plugin/dist/bootstrap.js", "plugin/engine-requirements.txt", "bin/codebase-index.mjs", "commands/search.md", "skill/codebase-search/SKILL.md", "python/codebase_index/rpc.py", "python/codebase_index/embeddings/code-static/model.safetensors", "pyproject.toml", "README.md", "LICENSE"]) {
      assert.ok(files.includes(must), `${must} is in the tarball`);
    }
    for (const file of files) assert.doesNotMatch(file, /^(tests|bench|node_modules)\/|^Makefile$|__pycache__|all-MiniLM-L6-v2/, `${file} must not be shipped`);
    const tarball = path.join(packs, packed[0].filename);

    // 2. Install it (dependencies from the registry) where OpenCode's npm step puts a named plugin.
    installed = path.join(home, ".cache", "opencode", "packages", `${PACKAGE.name}@latest`);
    mkdirSync(installed, { recursive: true });
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--omit=dev", "--loglevel=error", tarball], { cwd: installed, stdio: "pipe" });

    // 3. An empty project whose opencode.json names the package. The index lives in the user's data folder
    // (scope "global" in the user's codebase-index config), so the project has no `.opencode/` before
    // OpenCode starts (see tests/e2e), and it is built up front by this clone's engine: the question here
    // is whether the packaged plugin sets up its own engine on the first search, not indexing.
    writeSampleProject(project);
    execFileSync("git", ["init", "-q", "-b", "main"], { cwd: project });
    writeFileSync(path.join(home, ".config", "opencode", "codebase-index.json"), '{ "scope": "global" }\n');
    writeFileSync(
      path.join(project, "opencode.json"),
      JSON.stringify({
        $schema: "https://opencode.ai/config.json",
        plugin: [PACKAGE.name],
        provider: { fake: { npm: "@ai-sdk/openai-compatible", name: "Fake", options: { baseURL: "{env:FAKE_LLM_URL}", apiKey: "x" }, models: { "fake-model": { name: "Fake model", tool_call: true } } } },
        model: "fake/fake-model",
        small_model: "fake/fake-model",
        permission: { "*": "allow" },
        autoupdate: false,
        share: "disabled",
        lsp: false,
      }),
    );
    env = {
      ...opencodeEnv(home, llm.url),
      // pip reaches the package registry (and its warm cache) as configured on the machine.
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("PIP_"))),
    };
    execFileSync(VENV_PYTHON, ["-m", "codebase_index.cli", "index", "--keyword-only", project], { env, stdio: "pipe" });
  });

  after(async () => {
    await llm?.close();
    for (const cleanup of cleanups) cleanup();
  });

  test("OpenCode loads the named package: tools, commands and skill", async () => {
    const agent = await run(OPENCODE, ["debug", "agent", "build"], { cwd: project, env });
    for (const name of ["codebase_search", "codebase_peek", "index_codebase", "index_status", "call_graph"]) {
      assert.match(agent.stdout, new RegExp(`\\b${name}\\b`), `${name} registered\n${agent.stderr.slice(-2000)}`);
    }
    const cfg = JSON.parse((await run(OPENCODE, ["debug", "config"], { cwd: project, env })).stdout);
    assert.ok(cfg.command?.search?.template, "/search registered from the package's commands/");
  });

  test("the first codebase_search sets up the engine and answers; later starts reuse it", async () => {
    const engineHome = path.join(env.XDG_DATA_HOME, "codebase-index", "engine", PACKAGE.version);
    assert.ok(!existsSync(engineHome), "no engine before the first call");
    const out = await run(OPENCODE, ["run", "--format", "json", "where is the invoice total computed?"], { cwd: project, env, timeoutMs: 900_000 });
    assert.equal(out.code, 0, out.stderr.slice(-3000));
    const final = llm.requests.filter((r) => r.tools?.length).at(-1);
    const result = final.messages.filter((m) => m.role === "tool").map(messageText).join("\n");
    assert.match(result, /billing\/invoices\.py/, result);
    assert.match(result, /compute_invoice_total/, result);
    const marker = path.join(engineHome, "ready.json");
    assert.ok(existsSync(marker), "the engine environment is marked ready");
    const builtAt = statSync(marker).mtimeMs;

    // The package's CLI bin goes through the same bootstrap and finds the environment ready.
    const cli = await run(path.join(installed, "node_modules", ".bin", "codebase-index"), ["status", project], { cwd: project, env });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /files:\s+4\n/, cli.stdout); // the sample project's three files and opencode.json
    assert.match(cli.stdout, /embeddings: +\d+\/\d+ chunks \(100%\) with embedded:code-static-v\d+ .* on this machine/, cli.stdout); // hybrid-ready: embedded in the index pass
    assert.doesNotMatch(cli.stderr, /creating the engine/, "no second set-up");
    assert.equal(statSync(marker).mtimeMs, builtAt);
  });
});

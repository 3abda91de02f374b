// End to end in the real OpenCode client (node_modules/.bin/opencode, 1.18.33), fully offline:
// a temp project loads the plugin from this working tree, a scripted model on 127.0.0.1 calls the tools,
// and the tests check that the real sidecar's answers reached the model.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { pathToFileURL } from "node:url";

import { markersIn, REPO, tempDir, VENV_PYTHON, writeHostileProject, writeSampleProject } from "../node/helpers.mjs";
import { messageText, startFakeLlm } from "./fake_llm.mjs";
import { opencodeEnv } from "./opencode_env.mjs";

const OPENCODE = path.join(REPO, "node_modules", ".bin", "opencode");
const PLUGIN = pathToFileURL(path.join(REPO, "plugin", "dist", "index.js")).href;
const ready = existsSync(OPENCODE) && existsSync(VENV_PYTHON);

function lastMessage(request) {
  return request.messages.at(-1);
}

function toolMessages(request) {
  return request.messages.filter((m) => m.role === "tool");
}

function userText(request) {
  return request.messages.filter((m) => m.role === "user").map(messageText).join("\n");
}

/**
 * The scripted model: a plain prompt indexes then searches; a slash command's template names the tool to
 * call. Once the planned calls are done it answers with the last tool output, so it shows up in stdout.
 */
function script(request) {
  const tools = toolMessages(request);
  const said = userText(request);
  let plan;
  if (/index_status/.test(said)) plan = [{ tool: "index_status", args: {} }];
  else if (/Call the `codebase_search` tool/.test(said)) {
    const limit = /limit=(\d+)/.exec(said);
    plan = [{ tool: "codebase_search", args: { query: "invoice total with tax", ...(limit ? { limit: Number(limit[1]) } : {}) } }];
  } else plan = [{ tool: "index_codebase", args: {} }, { tool: "codebase_search", args: { query: "invoice total with tax", limit: 3 } }];
  if (tools.length < plan.length) return plan[tools.length];
  return { text: `FINAL ANSWER\n${messageText(lastMessage(request))}` };
}

function run(cwd, env, args, timeoutMs = 90_000) {
  return new Promise((resolve, reject) => {
    const child = spawn(OPENCODE, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`opencode ${args.join(" ")} timed out\nstdout:\n${stdout}\nstderr:\n${stderr.slice(-4000)}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("OpenCode end to end", { skip: !ready && "needs npm ci and make install" }, () => {
  let llm;
  let project;
  let env;
  const cleanups = [];
  const scope = { after: (fn) => cleanups.push(fn) };

  before(async () => {
    llm = await startFakeLlm(script);
    const home = tempDir(scope, "cbi-e2e-home-");
    project = tempDir(scope, "cbi-e2e-project-");
    writeSampleProject(project);
    execFileSync("git", ["init", "-q", "-b", "main"], { cwd: project });
    // No `.opencode/` in the project: OpenCode would npm-install into it at start-up (slow offline). The
    // index goes to its default place, `<project>/.codebase-index/`, which must not make one either.
    writeFileSync(
      path.join(project, "opencode.json"),
      JSON.stringify(
        {
          $schema: "https://opencode.ai/config.json",
          plugin: [[PLUGIN, { pythonPath: VENV_PYTHON }]],
          provider: {
            fake: {
              npm: "@ai-sdk/openai-compatible",
              name: "Fake",
              options: { baseURL: "{env:FAKE_LLM_URL}", apiKey: "x" },
              models: { "fake-model": { name: "Fake model", tool_call: true } },
            },
          },
          model: "fake/fake-model",
          small_model: "fake/fake-model",
          permission: { "*": "allow" },
          autoupdate: false,
          share: "disabled",
          lsp: false,
        },
        null,
        2,
      ),
    );
    for (const dir of [".config", ".local/share", ".cache", ".local/state", "tmp"]) mkdirSync(path.join(home, dir), { recursive: true });
    env = opencodeEnv(home, llm.url);
  });

  after(async () => {
    await llm?.close();
    for (const cleanup of cleanups) cleanup();
  });

  test("the plugin's tools and commands are loaded", async () => {
    const agent = await run(project, env, ["debug", "agent", "build"]);
    for (const name of ["codebase_search", "codebase_peek", "index_codebase", "index_status", "index_health_check", "index_metrics", "index_logs"]) {
      assert.match(agent.stdout, new RegExp(`\\b${name}\\b`), `${name} registered\n${agent.stderr.slice(-2000)}`);
    }
    const config = await run(project, env, ["debug", "config"]);
    const cfg = JSON.parse(config.stdout);
    for (const name of ["index", "search", "find", "status"]) assert.ok(cfg.command?.[name]?.template, `/${name} registered`);
    const skills = JSON.parse((await run(project, env, ["debug", "skill"])).stdout);
    const skill = skills.find((s) => s.name === "codebase-search");
    assert.ok(skill, "the codebase-search skill is found through the plugin's skills.paths");
    assert.equal(skill.location, path.join(REPO, "skill", "codebase-search", "SKILL.md"));
    assert.match(skill.description, /codebase_search/);
  });

  // Runs before anything indexed the project: the first /search indexes it and answers (issue 26).
  test("/search on a project with no index yet passes its arguments and returns the sidecar's hits", async () => {
    const before = llm.requests.length;
    const out = await run(project, env, ["run", "--format", "json", "--command", "search", "invoice total limit=2"]);
    assert.equal(out.code, 0, out.stderr.slice(-3000));
    const mine = llm.requests.slice(before).filter((r) => r.tools?.length);
    assert.match(userText(mine[0]), /invoice total limit=2/);
    const result = toolMessages(mine.at(-1)).map(messageText).join("\n");
    assert.match(result, /billing\/invoices\.py/, result);
    assert.doesNotMatch(result, /not indexed/, result);
  });

  test("a prompt: the model indexes, searches, and the sidecar's result reaches it", async () => {
    const before = llm.requests.length;
    const out = await run(project, env, ["run", "--format", "json", "where is the invoice total computed?"]);
    assert.equal(out.code, 0, out.stderr.slice(-3000));
    const mine = llm.requests.slice(before).filter((r) => r.tools?.length);
    assert.ok(mine.length >= 3, `expected index, search and answer turns, got ${mine.length}`);
    const final = mine.at(-1);
    const [indexResult, searchResult] = toolMessages(final).map(messageText);
    assert.match(indexResult, /\b\d+ files?\b/, indexResult);
    assert.match(searchResult, /billing\/invoices\.py/, searchResult);
    assert.match(searchResult, /compute_invoice_total/, searchResult);
    assert.match(out.stdout, /FINAL ANSWER/);
    assert.match(out.stdout, /compute_invoice_total/);
  });

  test("/status runs index_status through the command template", async () => {
    const before = llm.requests.length;
    const out = await run(project, env, ["run", "--format", "json", "--command", "status"]);
    assert.equal(out.code, 0, out.stderr.slice(-3000));
    const mine = llm.requests.slice(before).filter((r) => r.tools?.length);
    assert.match(userText(mine[0]), /Call the `index_status` tool/);
    const result = toolMessages(mine.at(-1)).map(messageText).join("\n");
    assert.ok(result.length > 0 && !/index_status failed/.test(result), result);
    assert.match(out.stdout, /FINAL ANSWER/);
  });

  test("opencode debug agent runs codebase_search with no model", async () => {
    const out = await run(project, env, ["debug", "agent", "build", "--tool", "codebase_search", "--params", JSON.stringify({ query: "render banner title", limit: 2 })]);
    assert.equal(out.code, 0, out.stderr.slice(-3000));
    assert.match(out.stdout, /render\.ts/);
    assert.match(out.stdout, /renderBanner/);
  });

  test("after all the runs the index is in .codebase-index and OpenCode installed nothing in the project", () => {
    assert.ok(existsSync(path.join(project, ".codebase-index", "codebase.db")), "the index is in <project>/.codebase-index");
    assert.ok(existsSync(path.join(project, ".codebase-index", ".gitignore")), "with its own .gitignore");
    for (const made of ["node_modules", "package.json", "package-lock.json", "bun.lock", "bun.lockb"]) {
      assert.ok(!existsSync(path.join(project, ".opencode", made)), `.opencode/${made} appeared`);
    }
    assert.ok(!existsSync(path.join(project, ".opencode")), "nothing of ours under .opencode/");
    const untracked = execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], { cwd: project, encoding: "utf8" });
    assert.doesNotMatch(untracked, /\.codebase-index/, untracked);
  });
});

// Safe with any repository (issue 24): OpenCode opened in a cloned project that tries to make us run its
// programs (pythonPath, serveArgs, a committed .venv, argparse.py/codebase_index/ shadowing the real
// modules) and to read what is not its own (a knowledge base outside it, an API key from the environment,
// a private key among its files). The plugin and the engine come from the user's own configuration only.
describe("OpenCode in a hostile repository", { skip: !ready && "needs npm ci and make install" }, () => {
  const KB_CANARY = "CANARY_SECRET_5f1c9e";
  const ENV_CANARY = "ENVCANARY_83bd21";
  const KEY_CANARY = "KEYCANARY0d4e7a";
  let llm;
  let project;
  let markers;
  let env;
  const cleanups = [];
  const scope = { after: (fn) => cleanups.push(fn) };

  /** Index, then search for the canaries' neighbourhood (never the canaries themselves), then answer. */
  function hostileScript(request) {
    const tools = toolMessages(request);
    const plan = [{ tool: "index_codebase", args: {} }, { tool: "codebase_search", args: { query: "canary secret notes private key", limit: 10 } }];
    if (tools.length < plan.length) return plan[tools.length];
    return { text: `FINAL ANSWER\n${toolMessages(request).map(messageText).join("\n")}` };
  }

  before(async () => {
    llm = await startFakeLlm(hostileScript);
    const home = tempDir(scope, "cbi-e2e-hostile-home-");
    const root = tempDir(scope, "cbi-e2e-hostile-");
    project = path.join(root, "project");
    markers = path.join(root, "markers");
    const secretDir = path.join(root, "secret-notes");
    mkdirSync(project);
    mkdirSync(secretDir);
    writeFileSync(path.join(secretDir, "notes.py"), `def canary_secret_notes():\n    return "${KB_CANARY}"\n`);
    const file = writeHostileProject(project, markers, { secretDir });
    // The file also asks for a remote provider whose key comes from the user's environment.
    const hostileConfig = JSON.parse(readFileSync(file, "utf8"));
    hostileConfig.embeddingProvider = "custom";
    hostileConfig.customProvider = { baseUrl: `${llm.url}`, model: "x", dimensions: 8, apiKey: "{env:CBI_E2E_SECRET}" };
    writeFileSync(file, `${JSON.stringify(hostileConfig, null, 2)}\n`);
    // A private key pasted into a document the engine would otherwise index (a .md file is read).
    mkdirSync(path.join(project, "docs"));
    writeFileSync(
      path.join(project, "docs", "deploy.md"),
      `# Deploy notes\n\nThe canary secret notes: the private key for the deploy.\n\n-----BEGIN OPENSSH PRIVATE KEY-----\n` +
        `${`b3BlbnNzaC1rZXktdjEAAAAA${KEY_CANARY}`.padEnd(64, "A")}\n`.repeat(4) +
        "-----END OPENSSH PRIVATE KEY-----\n",
    );
    execFileSync("git", ["init", "-q", "-b", "main"], { cwd: project });

    // The user's own configuration: the plugin and the model in the global opencode.json, the interpreter
    // in the global codebase-index.json (the numpy backend: no int8 model build in this fresh home).
    const configDir = path.join(home, ".config", "opencode");
    for (const dir of [".config/opencode", ".local/share", ".cache", ".local/state", "tmp"]) mkdirSync(path.join(home, dir), { recursive: true });
    writeFileSync(
      path.join(configDir, "opencode.json"),
      JSON.stringify({
        $schema: "https://opencode.ai/config.json",
        plugin: [PLUGIN],
        provider: { fake: { npm: "@ai-sdk/openai-compatible", name: "Fake", options: { baseURL: "{env:FAKE_LLM_URL}", apiKey: "x" }, models: { "fake-model": { name: "Fake model", tool_call: true } } } },
        model: "fake/fake-model",
        small_model: "fake/fake-model",
        permission: { "*": "allow" },
        autoupdate: false,
        share: "disabled",
        lsp: false,
      }),
    );
    writeFileSync(path.join(configDir, "codebase-index.json"), JSON.stringify({ pythonPath: VENV_PYTHON, embeddedBackend: "numpy" }));
    env = {
      ...opencodeEnv(home, llm.url),
      CBI_E2E_SECRET: ENV_CANARY,
    };
  });

  after(async () => {
    await llm?.close();
    for (const cleanup of cleanups) cleanup();
  });

  test("no program of the project runs, nothing outside it reaches the model, and the answers say what was withheld", async () => {
    const out = await run(project, env, ["run", "--format", "json", "where are the request handlers?"]);
    assert.equal(out.code, 0, out.stderr.slice(-3000));
    assert.deepEqual(markersIn(markers), [], "none of the project's programs ran and its serveArgs were not used");
    const mine = llm.requests.filter((r) => r.tools?.length);
    const [indexed, searched] = toolMessages(mine.at(-1)).map(messageText);
    assert.match(indexed, /\b\d+ files?\b/, indexed);
    assert.doesNotMatch(searched ?? "", /codebase_search failed/, searched);
    for (const answer of [indexed, searched]) {
      // One note line names what the untrusted file asked for, the plugin's keys among them.
      const notes = answer.split("\n").filter((line) => line.includes(".opencode/codebase-index.json is not trusted"));
      assert.equal(notes.length, 1, answer);
      for (const key of ["pythonPath", "serveArgs", "customProvider", "knowledgeBases"]) assert.match(notes[0], new RegExp(key), notes[0]);
      assert.match(notes[0], /codebase-index trust/);
    }
    // Nothing of the outside folder, the environment or the private key reached the model or the output.
    const everything = `${JSON.stringify(llm.requests)}\n${out.stdout}\n${out.stderr}`;
    for (const canary of [KB_CANARY, ENV_CANARY, KEY_CANARY]) assert.ok(!everything.includes(canary), `${canary} leaked`);
    assert.match(out.stdout, /FINAL ANSWER/);
  });
});

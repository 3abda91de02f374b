// The npm launcher (bin/codebase-index.mjs) as users run it: from npx's cache or a global install, with a
// temporary HOME. `install --dry-run` and `uninstall` never build the engine; `install` writes a command that
// outlives npx's cache; a signal that ends the engine ends the launcher with 128 + its number.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { once } from "node:events";
import { test } from "node:test";

import { REPO, tempDir, VENV_PYTHON } from "./helpers.mjs";

/** The package's launcher and the standard-library part of the engine, copied to `root` as npm unpacks it. */
function unpack(root) {
  for (const name of ["package.json", "bin", "plugin/dist", "plugin/engine-requirements.txt"]) {
    cpSync(path.join(REPO, name), path.join(root, name), { recursive: true });
  }
  for (const name of ["__init__.py", "agents.py", "jsonc.py"]) {
    cpSync(path.join(REPO, "python", "codebase_index", name), path.join(root, "python", "codebase_index", name));
  }
  return path.join(root, "bin", "codebase-index.mjs");
}

function user(t) {
  const dir = tempDir(t);
  const home = path.join(dir, "home");
  mkdirSync(home);
  const env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(dir, "data"), XDG_CONFIG_HOME: path.join(home, ".config") };
  delete env.CODEBASE_INDEX_PYTHON;
  delete env.CODEBASE_INDEX_MCP_LAUNCHER;
  if (existsSync(VENV_PYTHON)) env.CODEBASE_INDEX_BOOTSTRAP_PYTHON = VENV_PYTHON;
  return { dir, home, env };
}

function dryRun(bin, u) {
  return execFileSync(process.execPath, [bin, "install", "--dry-run", "cursor"], { cwd: u.home, env: u.env, encoding: "utf8" });
}

test("from npx's cache, `install --dry-run` shows `npx -y local-codebase-index mcp`, builds no engine and writes nothing", (t) => {
  const u = user(t);
  const bin = unpack(path.join(u.home, ".npm", "_npx", "0a1b2c3d4e5f", "node_modules", "local-codebase-index"));
  const before = readdirSync(u.home, { recursive: true }).sort();
  const out = dryRun(bin, u);
  assert.match(out, /^cursor +would add +~\/\.cursor\/mcp\.json: mcpServers\.codebase-index = \{"command": "npx", "args": \["-y", "local-codebase-index", "mcp", "--project", "\$\{workspaceFolder\}"\]\}$/m, out);
  assert.doesNotMatch(out, /_npx/, "nothing points into the cache");
  assert.match(out, /dry run: nothing was written/);
  assert.equal(existsSync(path.join(u.dir, "data")), false, "no engine was set up");
  assert.deepEqual(readdirSync(u.home, { recursive: true }).sort(), before);
});

test("from a global install, `install --dry-run` shows the package's own MCP bin", (t) => {
  const u = user(t);
  const root = path.join(u.dir, "prefix", "lib", "node_modules", "local-codebase-index");
  const out = dryRun(unpack(root), u);
  const entry = JSON.stringify({ command: process.execPath, args: [path.join(root, "bin", "codebase-index-mcp.mjs"), "--project", "${workspaceFolder}"] });
  assert.ok(out.includes(`mcpServers.codebase-index = ${entry.replaceAll(",", ", ").replaceAll(":", ": ")}`), out);
  assert.equal(existsSync(path.join(u.dir, "data")), false, "no engine was set up");
});

test("`uninstall` through the launcher removes what install wrote and builds no engine", (t) => {
  const u = user(t);
  const bin = unpack(path.join(u.dir, "prefix", "lib", "node_modules", "local-codebase-index"));
  const claude = path.join(u.home, ".claude.json");
  const entry = { command: "npx", args: ["-y", "local-codebase-index", "mcp"] };
  writeFileSync(claude, JSON.stringify({ numStartups: 3, mcpServers: { "codebase-index": entry } }));
  const out = execFileSync(process.execPath, [bin, "uninstall"], { cwd: u.home, env: u.env, encoding: "utf8" });
  assert.match(out, /^claude-code +removed +~\/\.claude\.json: mcpServers\.codebase-index$/m, out);
  assert.deepEqual(JSON.parse(readFileSync(claude, "utf8")), { numStartups: 3 });
  assert.equal(existsSync(path.join(u.dir, "data")), false);
});

test("a signal that ends the engine ends the launcher with 128 + its number", { skip: !existsSync(VENV_PYTHON) && "no .venv (run make install)" }, async (t) => {
  const dir = tempDir(t);
  const env = { ...process.env, HOME: dir, XDG_CONFIG_HOME: path.join(dir, ".config"), CODEBASE_INDEX_PYTHON: VENV_PYTHON };
  const launcher = spawn(process.execPath, [path.join(REPO, "bin", "codebase-index.mjs"), "mcp", "--project", dir], { cwd: dir, env, stdio: ["pipe", "pipe", "inherit"] });
  const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "0" } } };
  launcher.stdin.write(`${JSON.stringify(initialize)}\n`);
  let out = "";
  launcher.stdout.setEncoding("utf8");
  for await (const chunk of launcher.stdout) {
    out += chunk;
    if (out.includes('"id":1')) break; // the engine runs: the signal reaches a live child
  }
  const exited = once(launcher, "exit");
  launcher.kill("SIGTERM");
  const [code] = await exited;
  assert.equal(code, 128 + os.constants.signals.SIGTERM);
});

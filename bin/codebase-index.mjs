#!/usr/bin/env node
// `codebase-index` (and `codebase-index-mcp`) from the npm package: set up the engine's environment on
// first use (plugin/dist/bootstrap.js, the same one the OpenCode plugin uses), then run the Python CLI
// with these arguments. Progress and errors go to stderr, so an MCP client's stdout stays clean.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { ensureEngine } from "../plugin/dist/bootstrap.js";

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const mcp = path.basename(process.argv[1] ?? "").startsWith("codebase-index-mcp");
const args = mcp ? ["mcp", ...process.argv.slice(2)] : process.argv.slice(2);

let python;
try {
  const explicit = process.env.CODEBASE_INDEX_PYTHON?.trim();
  python = explicit || (await ensureEngine({ packageRoot, report: (m) => process.stderr.write(`codebase-index: ${m}\n`) })).python;
} catch (error) {
  process.stderr.write(`codebase-index: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
// `codebase-index install` writes this package's MCP bin into the agents' configuration.
const launcher = JSON.stringify([process.execPath, path.join(packageRoot, "bin", "codebase-index-mcp.mjs")]);
const env = { ...process.env, CODEBASE_INDEX_MCP_LAUNCHER: launcher };
const child = spawn(python, ["-m", "codebase_index.cli", ...args], { stdio: "inherit", env });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(signal ? 128 + 1 : (code ?? 1)));
child.on("error", (error) => {
  process.stderr.write(`codebase-index: cannot run ${python}: ${error.message}\n`);
  process.exit(1);
});

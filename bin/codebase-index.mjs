#!/usr/bin/env node
// `codebase-index` (and `codebase-index-mcp`) from the npm package: set up the engine's environment on
// first use (plugin/dist/bootstrap.js, the same one the OpenCode plugin uses), then run the Python CLI
// with these arguments. Progress and errors go to stderr, so an MCP client's stdout stays clean.
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { ensureEngine, readyEngine, systemPython } from "../plugin/dist/bootstrap.js";

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const mcp = path.basename(process.argv[1] ?? "").startsWith("codebase-index-mcp");
const args = mcp ? ["mcp", ...process.argv.slice(2)] : process.argv.slice(2);
// `install --dry-run` and `uninstall` only read and edit agents' config files (agents.py, standard library
// only): they run the bundled sources with any Python >= 3.10 and never build the engine (~30 s, 640 MB).
const agentsOnly = args[0] === "uninstall" || (args[0] === "install" && args.includes("--dry-run"));

let python;
try {
  const explicit = process.env.CODEBASE_INDEX_PYTHON?.trim();
  const report = (m) => process.stderr.write(`codebase-index: ${m}\n`);
  python =
    explicit ||
    (agentsOnly ? (readyEngine(packageRoot) ?? (await systemPython())) : (await ensureEngine({ packageRoot, report })).python);
} catch (error) {
  process.stderr.write(`codebase-index: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
// `codebase-index install` writes this package's MCP bin into the agents' configuration (agents.py writes
// `npx -y local-codebase-index mcp` instead when this package runs from npx's cache).
const launcher = JSON.stringify([process.execPath, path.join(packageRoot, "bin", "codebase-index-mcp.mjs")]);
// The CLI runs in the caller's folder (its default project), which may be an untrusted repository:
// `python -m` would put that folder first on sys.path, so its `argparse.py` would run instead of the
// standard library's. RUN_CLI drops the working folder from sys.path before importing anything that is
// not built in; PYTHONSAFEPATH does the same for Python >= 3.11 and its multiprocessing children.
const RUN_CLI =
  "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; import runpy; " +
  "runpy.run_module('codebase_index.cli', run_name='__main__', alter_sys=True)";
// -I: no working folder, no user site, no PYTHON* variables; -B: no .pyc in the package; the bundled sources first.
const RUN_AGENTS =
  `import sys; sys.path.insert(0, ${JSON.stringify(path.join(packageRoot, "python"))}); ` +
  "from codebase_index.agents import main; sys.exit(main(sys.argv[1:]))";
const env = { ...process.env, CODEBASE_INDEX_MCP_LAUNCHER: launcher, PYTHONSAFEPATH: "1" };
const child = spawn(python, agentsOnly ? ["-I", "-B", "-c", RUN_AGENTS, ...args] : ["-c", RUN_CLI, ...args], { stdio: "inherit", env });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
// A child ended by a signal exits as a shell reports it: 128 + the signal's number (SIGTERM -> 143).
child.on("exit", (code, signal) => process.exit(signal ? 128 + (os.constants.signals[signal] ?? 0) : (code ?? 1)));
child.on("error", (error) => {
  process.stderr.write(`codebase-index: cannot run ${python}: ${error.message}\n`);
  process.exit(1);
});

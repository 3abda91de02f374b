/**
 * First-use set-up of the Python engine for an npm install of this package: one virtualenv per user and
 * package version under the user's data folder, with the Python package this npm package bundles
 * (python/, pyproject.toml; the embedded model is package data) and its dependencies from the package registry. Later starts find
 * the finished environment by its marker file and cost one stat.
 *
 * Steps: find Python >= 3.10 -> venv (`uv venv` when uv is on PATH, else `python -m venv`) -> every
 * dependency and the build tools from the lock this package ships
 * (plugin/engine-requirements.txt, `make engine-lock`), each pinned with `==` and the sha256 of its files,
 * installed with `--require-hashes --no-deps`: the registry (or anyone between us and it) cannot swap in
 * another version or file, and nothing unpinned comes along -> the
 * engine from a copy of the bundled sources with `--no-deps --no-build-isolation`. Every command runs in
 * the user's data folder, never in the project OpenCode was opened in (`python -m` imports from its working
 * folder; uv reads configuration found there). Everything is built in a scratch folder and renamed into
 * place, so a killed set-up leaves nothing half-made and two OpenCode windows racing each other both end
 * with one environment. Every failure is one `BootstrapError` whose message says what happened and what to run.
 */
import { spawn } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const MIN_PYTHON: [number, number] = [3, 10];
const PYTHON_CANDIDATES = ["python3", "python3.13", "python3.12", "python3.11", "python3.10", "python"];
/** The lock of the engine's dependencies, inside the package (package.json "files" ships it). */
export const ENGINE_LOCK = path.join("plugin", "engine-requirements.txt");
/** What the engine needs from the package folder to build; copied so a read-only install works. */
const PYTHON_SOURCES = ["pyproject.toml", "README.md", "LICENSE", "python"];
const READY = "ready.json";

export class BootstrapError extends Error {
  override name = "BootstrapError";
}

export interface BootstrapOptions {
  /** The npm package folder (holds package.json and the Python sources). */
  packageRoot: string;
  env?: Record<string, string | undefined>;
  /** Progress, one short line per step ("installing the engine's dependencies"). */
  report?: (message: string) => void;
  signal?: AbortSignal;
}

export interface Engine {
  python: string;
  /** The environment's folder. */
  home: string;
  /** True when this call built it. */
  created: boolean;
}

function packageVersion(packageRoot: string): string {
  try {
    const json = JSON.parse(readFileSync(path.join(packageRoot, "package.json"), "utf8")) as { version?: unknown };
    if (typeof json.version === "string" && json.version) return json.version;
  } catch {
    // fall through
  }
  throw new BootstrapError(`cannot read the version of the codebase-index package in ${packageRoot} (package.json)`);
}

/** `$XDG_DATA_HOME/codebase-index/engine/<version>` (or ~/.local/share/...; %LOCALAPPDATA% on Windows). */
export function engineHome(packageRoot: string, env: Record<string, string | undefined> = process.env): string {
  const data =
    env.XDG_DATA_HOME?.trim() ||
    (process.platform === "win32" && env.LOCALAPPDATA ? env.LOCALAPPDATA : path.join(env.HOME || os.homedir(), ".local", "share"));
  return path.join(data, "codebase-index", "engine", packageVersion(packageRoot));
}

function venvPython(venv: string): string {
  return process.platform === "win32" ? path.join(venv, "Scripts", "python.exe") : path.join(venv, "bin", "python");
}

/** The engine's interpreter if the environment for this version is complete, else undefined (no spawn). */
export function readyEngine(packageRoot: string, env: Record<string, string | undefined> = process.env): string | undefined {
  const home = engineHome(packageRoot, env);
  const python = venvPython(path.join(home, "venv"));
  return existsSync(path.join(home, READY)) && existsSync(python) ? python : undefined;
}

export interface Command {
  command: string;
  args: string[];
}

/**
 * How the pinned dependencies are installed into the environment whose interpreter is `python`: with pip
 * (`python -m pip`) or uv, always `--require-hashes --no-deps -r <lock>`.
 */
export function lockInstallCommand(installer: "pip" | "uv", python: string, lock: string): Command {
  const pinned = ["--require-hashes", "--no-deps", "-r", lock];
  return installer === "uv"
    ? { command: "uv", args: ["pip", "install", "--quiet", "--python", python, ...pinned] }
    : { command: python, args: ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", ...pinned] };
}

/** How the bundled engine sources are installed over the locked dependencies: nothing more from the registry. */
export function engineInstallCommand(installer: "pip" | "uv", python: string, sources: string): Command {
  const local = ["--no-deps", "--no-build-isolation", sources];
  return installer === "uv"
    ? { command: "uv", args: ["pip", "install", "--quiet", "--python", python, ...local] }
    : { command: python, args: ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", ...local] };
}

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  missing: boolean;
}

function run(command: string, args: string[], options: { env: Record<string, string | undefined>; log?: string; signal?: AbortSignal; cwd?: string }): Promise<RunResult> {
  return new Promise((resolve) => {
    if (options.log) appendFileSync(options.log, `\n$ ${command} ${args.join(" ")}\n`);
    let child;
    try {
      child = spawn(command, args, { env: options.env as NodeJS.ProcessEnv, cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"], signal: options.signal });
    } catch {
      resolve({ code: null, stdout: "", stderr: "", missing: true });
      return;
    }
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      if (options.log) appendFileSync(options.log, d);
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
      if (options.log) appendFileSync(options.log, d);
    });
    child.once("error", (error: NodeJS.ErrnoException) => resolve({ code: null, stdout, stderr: stderr || error.message, missing: error.code === "ENOENT" }));
    child.once("close", (code) => resolve({ code, stdout, stderr, missing: false }));
  });
}

/** The first interpreter on PATH that is Python >= 3.10, with what was tried. */
async function findPython(env: Record<string, string | undefined>, cwd: string): Promise<{ python?: string; tried: string[] }> {
  const tried: string[] = [];
  const explicit = env.CODEBASE_INDEX_BOOTSTRAP_PYTHON?.trim();
  for (const candidate of explicit ? [explicit] : PYTHON_CANDIDATES) {
    const probe = await run(candidate, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { env, cwd });
    const version = probe.code === 0 ? probe.stdout.trim() : "";
    tried.push(version ? `${candidate} (${version})` : `${candidate} (${probe.missing ? "not found" : "failed"})`);
    const [major, minor] = version.split(".").map(Number);
    if (major !== undefined && minor !== undefined && (major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]))) {
      return { python: candidate, tried };
    }
  }
  return { tried };
}

function lastLines(text: string, n = 3): string {
  return text.trim().split("\n").filter((l) => l.trim()).slice(-n).join(" | ");
}

const NETWORK_TROUBLE =
  /Could not find a version|No matching distribution|Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|ConnectTimeout|ReadTimeout|ProxyError|SSLError|Connection refused|connection error|failed to fetch/i;

const MANUAL =
  "Or install the engine yourself: `pip install local-codebase-index` (Python >= 3.10), then set `pythonPath` in " +
  "~/.config/opencode/codebase-index.json (or CODEBASE_INDEX_PYTHON) to that interpreter.";

function stepError(step: string, result: RunResult, log: string): BootstrapError {
  const detail = lastLines(result.stderr || result.stdout) || `exit code ${String(result.code)}`;
  if (NETWORK_TROUBLE.test(result.stderr + result.stdout)) {
    return new BootstrapError(
      `setting up the codebase-index engine failed while ${step}: the Python package index could not be reached (${detail}). ` +
        `Check the network or pip's proxy/index settings and retry. Full log: ${log}. ${MANUAL}`,
    );
  }
  return new BootstrapError(`setting up the codebase-index engine failed while ${step}: ${detail}. Full log: ${log}. ${MANUAL}`);
}

function noPython(tried: string[]): BootstrapError {
  return new BootstrapError(
    `codebase-index needs Python ${MIN_PYTHON.join(".")} or newer for its search engine and found none on PATH ` +
      `(tried ${tried.join(", ")}). Install one (Debian/Ubuntu: \`sudo apt install python3 python3-venv\`; ` +
      "macOS: `brew install python@3.12`) and retry, or set CODEBASE_INDEX_BOOTSTRAP_PYTHON to an interpreter. " +
      MANUAL,
  );
}

/**
 * A Python >= 3.10 from PATH (or CODEBASE_INDEX_BOOTSTRAP_PYTHON) for work that needs only the standard
 * library (`install --dry-run`, `uninstall`): nothing is built. Probed in the user's home, never the project.
 */
export async function systemPython(env: Record<string, string | undefined> = process.env): Promise<string> {
  const found = await findPython(env, env.HOME || os.homedir());
  if (!found.python) throw noPython(found.tried);
  return found.python;
}

let inFlight: Promise<Engine> | undefined;

/** The engine's Python, building its environment first if this package version has none yet. */
export async function ensureEngine(options: BootstrapOptions): Promise<Engine> {
  const env = options.env ?? process.env;
  const home = engineHome(options.packageRoot, env);
  const ready = readyEngine(options.packageRoot, env);
  if (ready) return { python: ready, home, created: false };
  // One set-up per process even when several tool calls arrive together.
  inFlight ??= build(options, env, home).finally(() => {
    inFlight = undefined;
  });
  return await inFlight;
}

async function build(options: BootstrapOptions, env: Record<string, string | undefined>, home: string): Promise<Engine> {
  const report = options.report ?? (() => undefined);
  const parent = path.dirname(home);
  mkdirSync(parent, { recursive: true });
  const scratch = `${home}.build-${process.pid}-${Date.now()}`;
  const log = `${home}.log`;
  writeFileSync(log, `codebase-index engine set-up for ${home}\n`);
  // Every command runs in the user's data folder: never in the project OpenCode was opened in.
  const opts = { env, log, signal: options.signal, cwd: parent };
  try {
    const lock = path.join(options.packageRoot, ENGINE_LOCK);
    if (!existsSync(lock)) {
      throw new BootstrapError(
        `the codebase-index package in ${options.packageRoot} has no ${ENGINE_LOCK} (the pinned engine dependencies); reinstall the package. ${MANUAL}`,
      );
    }
    report("looking for Python >= 3.10");
    const found = await findPython(env, parent);
    if (!found.python) throw noPython(found.tried);
    const venv = path.join(scratch, "venv");
    const python = venvPython(venv);
    const installer = (await run("uv", ["--version"], { env, cwd: parent })).code === 0 ? "uv" : "pip";
    mkdirSync(scratch, { recursive: true });
    report(`creating the engine's environment (${installer === "uv" ? "uv" : `${found.python} -m venv`})`);
    // No --seed: uv installs into the environment itself, and a seed would be unpinned packages.
    const made =
      installer === "uv"
        ? await run("uv", ["venv", "--quiet", "--python", found.python, venv], opts)
        : await run(found.python, ["-m", "venv", venv], opts);
    if (made.code !== 0) {
      const hint = /ensurepip|venv/.test(made.stderr) ? " (Debian/Ubuntu: `sudo apt install python3-venv`)" : "";
      throw new BootstrapError(
        `setting up the codebase-index engine failed: \`${found.python} -m venv\` did not work${hint}: ` +
          `${lastLines(made.stderr || made.stdout)}. Full log: ${log}. ${MANUAL}`,
      );
    }

    // Dependencies and build tools, exactly as locked. The embedded model is the engine's own package data.
    report("installing the engine's pinned dependencies (a minute or two, once)");
    const pinned = lockInstallCommand(installer, python, lock);
    const deps = await run(pinned.command, pinned.args, opts);
    if (deps.code !== 0) throw stepError(`installing the pinned dependencies (${ENGINE_LOCK})`, deps, log);

    const sources = path.join(scratch, "src");
    for (const name of PYTHON_SOURCES) {
      cpSync(path.join(options.packageRoot, name), path.join(sources, name), { recursive: true, filter: (p) => !p.includes("__pycache__") });
    }
    report("installing the engine");
    // Without build isolation the build uses the locked setuptools and wheel already in the environment
    // instead of fetching unpinned ones into a second environment.
    const own = engineInstallCommand(installer, python, sources);
    const engine = await run(own.command, own.args, opts);
    if (engine.code !== 0) throw stepError("installing the engine's Python package", engine, log);

    report("checking the engine");
    const check = await run(python, ["-I", "-c", "import codebase_index.rpc, codebase_index.embeddings.static as s; s.StaticEmbedder()"], opts);
    if (check.code !== 0) throw stepError("checking the installed engine", check, log);
    writeFileSync(path.join(scratch, READY), `${JSON.stringify({ python: found.python, installer, at: new Date().toISOString() })}\n`);
    try {
      renameSync(scratch, home);
    } catch (error) {
      // Another process finished first: use its environment.
      if (!readyEngine(options.packageRoot, env)) throw error;
      rmSync(scratch, { recursive: true, force: true });
    }
    report("engine ready");
    return { python: venvPython(path.join(home, "venv")), home, created: true };
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    if (error instanceof BootstrapError) throw error;
    throw new BootstrapError(`setting up the codebase-index engine failed: ${(error as Error).message}. Full log: ${log}. ${MANUAL}`);
  }
}

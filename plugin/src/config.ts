/**
 * Plugin settings and the choice of Python interpreter for the sidecar.
 *
 * Settings come from the plugin options in opencode.json (`"plugin": [["file:///.../index.js", {...}]]`),
 * then the environment, then `<project>/.opencode/codebase-index.json`, so a user can pin the interpreter
 * without touching the shared opencode.json.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

export interface PluginSettings {
  pythonPath?: string;
  /** Per-method timeouts in ms (`{"index": 3600000}`). */
  timeouts?: Record<string, number>;
  initializeTimeoutMs?: number;
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** Extra arguments for `codebase-index serve`. */
  serveArgs?: string[];
}

export interface PythonChoice {
  python: string;
  source: string;
  /** No interpreter was configured or found: build the engine's own environment first (bootstrap.ts). */
  bootstrap?: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Keep only well-typed settings: a typo in a JSON file must not crash OpenCode's start-up. */
export function parseSettings(raw: unknown): PluginSettings {
  if (!isRecord(raw)) return {};
  const out: PluginSettings = {};
  if (typeof raw.pythonPath === "string" && raw.pythonPath.trim()) out.pythonPath = raw.pythonPath.trim();
  if (isRecord(raw.timeouts)) {
    const timeouts: Record<string, number> = {};
    for (const [method, value] of Object.entries(raw.timeouts)) {
      if (typeof value === "number" && Number.isFinite(value) && value > 0) timeouts[method] = value;
    }
    out.timeouts = timeouts;
  }
  for (const key of ["initializeTimeoutMs", "backoffBaseMs", "backoffCapMs"] as const) {
    const value = raw[key];
    if (typeof value === "number" && Number.isFinite(value) && value >= 0) out[key] = value;
  }
  if (Array.isArray(raw.serveArgs) && raw.serveArgs.every((a) => typeof a === "string")) {
    out.serveArgs = raw.serveArgs as string[];
  }
  return out;
}

/**
 * JSONC -> JSON the way the engine reads the same file (config.strip_jsonc): comments become spaces, so
 * line and column numbers in errors stay right; trailing commas are dropped; strings are never touched.
 */
export function stripJsonc(text: string): string {
  const tokens = /"(?:\\.|[^"\\])*"|\/\/[^\n]*|\/\*(?:[\s\S]*?\*\/|[\s\S]*$)/g;
  const withoutComments = text.replace(tokens, (token, offset: number) => {
    if (token.startsWith('"')) return token;
    if (token.startsWith("/*") && !token.endsWith("*/")) {
      const line = text.slice(0, offset).split("\n").length;
      throw new SyntaxError(`line ${line}: unterminated /* comment`);
    }
    return token.replace(/[^\n]/g, " ");
  });
  return withoutComments.replace(/"(?:\\.|[^"\\])*"|,(\s*[}\]])/g, (token, tail: string | undefined) =>
    tail === undefined ? token : ` ${tail}`,
  );
}

export interface ProjectSettings {
  settings: PluginSettings;
  /** Why the file could not be read (it exists but is not valid JSONC); shown to the user. */
  error?: string;
}

export const PROJECT_SETTINGS_FILE = path.join(".opencode", "codebase-index.json");

/** `<project>/.opencode/codebase-index.json` (JSONC, like the engine); no file is no settings, not an error. */
export function readProjectSettings(project: string): ProjectSettings {
  const file = path.join(project, PROJECT_SETTINGS_FILE);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === "ENOENT" || code === "ENOTDIR") return { settings: {} };
    return { settings: {}, error: `${PROJECT_SETTINGS_FILE}: cannot read: ${(error as Error).message}` };
  }
  try {
    const raw: unknown = JSON.parse(stripJsonc(text.replace(/^\uFEFF/, "")));
    if (!isRecord(raw)) return { settings: {}, error: `${PROJECT_SETTINGS_FILE}: the top level must be an object` };
    return { settings: parseSettings(raw) };
  } catch (error) {
    return { settings: {}, error: `${PROJECT_SETTINGS_FILE}: invalid JSON: ${(error as Error).message}` };
  }
}

/** True when the virtualenv at `venv` has codebase-index installed (a dist-info or editable marker). */
export function venvHasCodebaseIndex(venv: string): boolean {
  const lib = path.join(venv, "lib");
  let versions: string[];
  try {
    versions = readdirSync(lib).filter((name) => name.startsWith("python"));
  } catch {
    return false;
  }
  for (const version of versions) {
    let entries: string[];
    try {
      entries = readdirSync(path.join(lib, version, "site-packages"));
    } catch {
      continue;
    }
    if (entries.some((name) => /^(__editable__\.)?codebase_index[-_.]/.test(name) || name === "codebase_index")) {
      return true;
    }
  }
  return false;
}

export interface PythonLookup {
  project: string;
  /** Root of the codebase-index repository this plugin was loaded from (plugin/..). */
  pluginRepo: string;
  options: PluginSettings;
  projectSettings: PluginSettings;
  env: Record<string, string | undefined>;
  exists?: (file: string) => boolean;
  hasPackage?: (venv: string) => boolean;
}

/**
 * Explicit settings win; otherwise prefer a virtualenv that really has the package (a project's own
 * `.venv` is usually for the project's code, not for codebase-index), then the plugin repository's
 * `.venv` (a source checkout), then the per-user engine environment an npm install sets up on first use.
 */
export function choosePython(lookup: PythonLookup): PythonChoice {
  const exists = lookup.exists ?? existsSync;
  const hasPackage = lookup.hasPackage ?? venvHasCodebaseIndex;
  if (lookup.options.pythonPath) return { python: lookup.options.pythonPath, source: "plugin option pythonPath" };
  const fromEnv = lookup.env.CODEBASE_INDEX_PYTHON?.trim();
  if (fromEnv) return { python: fromEnv, source: "environment variable CODEBASE_INDEX_PYTHON" };
  if (lookup.projectSettings.pythonPath) {
    const configured = lookup.projectSettings.pythonPath;
    const python = path.isAbsolute(configured) || !configured.includes("/") ? configured : path.resolve(lookup.project, configured);
    return { python, source: "pythonPath in .opencode/codebase-index.json" };
  }
  const candidates: Array<[string, string]> = [
    [path.join(lookup.project, ".venv"), "the project's .venv"],
    [path.join(lookup.pluginRepo, ".venv"), "the codebase-index repository's .venv"],
  ];
  for (const [venv, source] of candidates) {
    const python = path.join(venv, "bin", "python");
    if (exists(python) && hasPackage(venv)) return { python, source };
  }
  return { python: "python3", source: "the engine environment set up on first use", bootstrap: true };
}

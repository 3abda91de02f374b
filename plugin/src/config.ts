/**
 * Plugin settings and the choice of Python interpreter for the sidecar.
 *
 * A repository is untrusted input: opening a cloned project must never make the plugin run a program the
 * project names. So the settings that name a program (`pythonPath`, `serveArgs`) are honoured only from the
 * user's own places, and from the project's `.opencode/codebase-index.json` only once the user trusted that
 * exact file (`codebase-index trust` in the project, the record python/codebase_index/trust.py writes: the
 * file's sha256 in `<user config dir>/codebase-index-trust.json`; any change to the file revokes it). An
 * untrusted project file keeps its harmless keys (timeouts, initializeTimeoutMs, backoffBaseMs,
 * backoffCapMs); what it asked for and did not get is named in one note line on every tool answer.
 *
 * Where each setting comes from, first found wins:
 *   1. the plugin options in opencode.json (`"plugin": [["file:///.../index.js", {...}]]`);
 *   2. the environment (CODEBASE_INDEX_PYTHON, for the interpreter);
 *   3. the project's `.opencode/codebase-index.json`: harmless keys always, pythonPath/serveArgs once trusted;
 *   4. the user's global `<user config dir>/codebase-index.json` (JSONC, the same file the engine reads);
 *   5. for the interpreter only: the `.venv` of the codebase-index clone the plugin runs from, then the
 *      per-user engine environment an npm install sets up on first use (bootstrap.ts).
 * The project's own `.venv` is never picked by itself: a committed `.venv/bin/python` is repository content.
 * The user config dir is `$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode` (the engine's too).
 */
import { createHash } from "node:crypto";
import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync, readdirSync, readFileSync, readSync, realpathSync } from "node:fs";
import os from "node:os";
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

/** Keys of a project file that name a program: honoured only once the user trusted the file. */
export const TRUST_KEYS = ["pythonPath", "serveArgs"] as const;

export const PROJECT_SETTINGS_FILE = path.join(".opencode", "codebase-index.json");
/** The project file as the notes name it, with forward slashes on every platform (like the engine's). */
const PROJECT_FILE_SHOWN = ".opencode/codebase-index.json";
export const USER_SETTINGS_FILE_NAME = "codebase-index.json";
export const TRUST_FILE_NAME = "codebase-index-trust.json";
/** A project file larger than this is refused rather than read (the engine's MAX_PROJECT_CONFIG_BYTES). */
const MAX_PROJECT_FILE_BYTES = 1_048_576;

type Env = Record<string, string | undefined>;

/** `$XDG_CONFIG_HOME/opencode` when set and non-empty, else `~/.config/opencode` ($HOME, else the OS's). */
export function userConfigDir(env: Env = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg ? xdg : path.join(env.HOME || os.homedir(), ".config");
  return path.join(base, "opencode");
}

export function trustStorePath(env: Env = process.env): string {
  return path.join(userConfigDir(env), TRUST_FILE_NAME);
}

/** The trust record's key for a project: its settings file's path under the real project root. */
export function projectConfigKey(project: string): string {
  return path.join(realpathSync(project), PROJECT_SETTINGS_FILE);
}

/** The recorded digests, `{key: sha256 hex}`; a missing or damaged record trusts nothing. */
export function readTrustRecords(env: Env = process.env): Record<string, string> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(trustStorePath(env), "utf8"));
  } catch {
    return {};
  }
  const files = isRecord(raw) ? raw.files : undefined;
  if (!isRecord(files)) return {};
  return Object.fromEntries(Object.entries(files).filter((entry): entry is [string, string] => typeof entry[1] === "string"));
}

export function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

export interface ProjectFile {
  /** The file's bytes, read once without following a link; undefined when there is no file. */
  data?: Buffer;
  /** Why the file is not read (a link, not a regular file, too large, unreadable). */
  problem?: string;
}

/**
 * The bytes of `<project>/.opencode/codebase-index.json` the way the engine reads them (trust.read_project_file):
 * neither `.opencode` nor the file may be a link (a repository must not borrow a file from elsewhere, nor
 * make us read a device or a pipe), the file must be regular and at most 1 MiB.
 */
export function readProjectFile(project: string): ProjectFile {
  let root: string;
  try {
    root = realpathSync(project);
  } catch {
    return {};
  }
  const folder = path.join(root, ".opencode");
  const file = path.join(folder, "codebase-index.json");
  for (const [where, mustBe] of [
    [folder, "folder"],
    [file, "file"],
  ] as const) {
    let stat;
    try {
      stat = lstatSync(where);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | undefined)?.code;
      if (code === "ENOENT" || code === "ENOTDIR") return {};
      return { problem: `${PROJECT_FILE_SHOWN}: cannot read: ${(error as Error).message}` };
    }
    if (stat.isSymbolicLink()) {
      const what = mustBe === "folder" ? ".opencode is a link" : `${PROJECT_FILE_SHOWN} is a link`;
      return { problem: `${what}: ${PROJECT_FILE_SHOWN} is not read (a project file must be its own)` };
    }
    if (mustBe === "folder" ? !stat.isDirectory() : !stat.isFile()) {
      return { problem: `${mustBe === "folder" ? ".opencode" : PROJECT_FILE_SHOWN} is not a regular ${mustBe}: ${PROJECT_FILE_SHOWN} is not read` };
    }
  }
  let fd: number;
  try {
    // O_NOFOLLOW closes the gap between the lstat above and the open; O_NONBLOCK keeps a swapped-in FIFO from hanging us.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === "ENOENT") return {};
    if (code === "ELOOP") return { problem: `${PROJECT_FILE_SHOWN} is a link: it is not read (a project file must be its own)` };
    return { problem: `${PROJECT_FILE_SHOWN}: cannot read: ${(error as Error).message}` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { problem: `${PROJECT_FILE_SHOWN} is not a regular file: it is not read` };
    if (stat.size > MAX_PROJECT_FILE_BYTES) return { problem: `${PROJECT_FILE_SHOWN} is ${stat.size} bytes, more than ${MAX_PROJECT_FILE_BYTES}` };
    const buffer = Buffer.alloc(MAX_PROJECT_FILE_BYTES + 1);
    let size = 0;
    for (;;) {
      const n = readSync(fd, buffer, size, buffer.length - size, null);
      if (n === 0) break;
      size += n;
      if (size > MAX_PROJECT_FILE_BYTES) return { problem: `${PROJECT_FILE_SHOWN} is more than ${MAX_PROJECT_FILE_BYTES} bytes` };
    }
    return { data: buffer.subarray(0, size) };
  } catch (error) {
    return { problem: `${PROJECT_FILE_SHOWN}: cannot read: ${(error as Error).message}` };
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether the project's settings file is trusted: a regular file (never a link) whose sha256 is the one
 * the trust record holds for this project. `data` is the file's bytes as already read, so the bytes
 * checked are the bytes used.
 */
export function isProjectFileTrusted(project: string, env: Env = process.env, data?: Buffer): boolean {
  const bytes = data ?? readProjectFile(project).data;
  if (!bytes) return false;
  let key: string;
  try {
    key = projectConfigKey(project);
  } catch {
    return false;
  }
  return readTrustRecords(env)[key] === sha256(bytes);
}

function parseJsonc(text: string, where: string): { raw?: Record<string, unknown>; error?: string } {
  try {
    const raw: unknown = JSON.parse(stripJsonc(text.replace(/^\uFEFF/, "")));
    if (!isRecord(raw)) return { error: `${where}: the top level must be an object` };
    return { raw };
  } catch (error) {
    return { error: `${where}: invalid JSON: ${(error as Error).message}` };
  }
}

export interface ProjectSettings {
  /** What the plugin uses from the file: all of it when trusted, else only the harmless keys. */
  settings: PluginSettings;
  /** True when the user trusted this exact file (`codebase-index trust`). */
  trusted: boolean;
  /** Keys the file sets that were not used because it is not trusted (pythonPath, serveArgs). */
  withheld: string[];
  /** Why the file could not be read (it exists but is not valid JSONC, or is a link); shown to the user. */
  error?: string;
}

/**
 * `<project>/.opencode/codebase-index.json` (JSONC, like the engine) as far as its trust allows; no file
 * is no settings, not an error. `env` locates the trust record (XDG_CONFIG_HOME, HOME).
 */
export function readProjectSettings(project: string, env: Env = process.env): ProjectSettings {
  const file = readProjectFile(project);
  if (file.problem) return { settings: {}, trusted: false, withheld: [], error: file.problem };
  if (!file.data) return { settings: {}, trusted: false, withheld: [] };
  const { raw, error } = parseJsonc(file.data.toString("utf8"), PROJECT_FILE_SHOWN);
  if (!raw) return { settings: {}, trusted: false, withheld: [], ...(error ? { error } : {}) };
  const settings = parseSettings(raw);
  if (isProjectFileTrusted(project, env, file.data)) return { settings, trusted: true, withheld: [] };
  const withheld: string[] = [];
  for (const key of TRUST_KEYS) {
    if (key in raw) withheld.push(key);
    delete settings[key];
  }
  return { settings, trusted: false, withheld };
}

export interface UserSettings {
  settings: PluginSettings;
  /** The file read (it may not exist). */
  file: string;
  error?: string;
}

/**
 * The user's own `<user config dir>/codebase-index.json` (JSONC): the place for a pythonPath or serveArgs
 * that holds for every project. A relative pythonPath with a folder in it is relative to that folder;
 * `~/` is the home folder; a bare name (`python3.12`) is looked up on PATH.
 */
export function readUserSettings(env: Env = process.env): UserSettings {
  const dir = userConfigDir(env);
  const file = path.join(dir, USER_SETTINGS_FILE_NAME);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === "ENOENT" || code === "ENOTDIR") return { settings: {}, file };
    return { settings: {}, file, error: `${file}: cannot read: ${(error as Error).message}` };
  }
  const { raw, error } = parseJsonc(text, file);
  if (!raw) return { settings: {}, file, ...(error ? { error } : {}) };
  const settings = parseSettings(raw);
  if (settings.pythonPath) {
    const configured = settings.pythonPath;
    if (configured === "~" || configured.startsWith("~/")) settings.pythonPath = path.join(env.HOME || os.homedir(), configured.slice(1));
    else if (!path.isAbsolute(configured) && configured.includes("/")) settings.pythonPath = path.resolve(dir, configured);
  }
  return { settings, file };
}

/** How the plugin's note and the engine's (config.untrusted_notice) both open. */
export const UNTRUSTED_OPENING = `${PROJECT_FILE_SHOWN} is not trusted`;

/** The note line on tool answers, with the keys it names (so an answer that names them already gets no second line). */
export interface Notice {
  line: string;
  keys: readonly string[];
}

/** The note for every tool answer when an untrusted project file asked for settings that name a program. */
export function withheldNotice(withheld: readonly string[]): Notice | undefined {
  if (withheld.length === 0) return undefined;
  const line =
    `${UNTRUSTED_OPENING}, so the plugin did not use its ${withheld.join(", ")}. Review the file, then run ` +
    "`codebase-index trust` in the project (or `npx local-codebase-index trust`) and restart OpenCode";
  return { line, keys: [...withheld] };
}

/** True when the virtualenv at `venv` has the engine installed (its package folder, or the dist-info or editable
 * marker of the `local-codebase-index` distribution or of builds from before the rename). */
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
    if (entries.some((name) => /^(__editable__[._])?(local_)?codebase_index[-_.]/.test(name) || name === "codebase_index")) {
      return true;
    }
  }
  return false;
}

export interface PythonLookup {
  project: string;
  /** Root of the codebase-index repository this plugin was loaded from (plugin/..). */
  pluginRepo: string;
  /** The plugin options from opencode.json. */
  options: PluginSettings;
  /** The project file's settings as readProjectSettings returns them: pythonPath only when trusted. */
  projectSettings: PluginSettings;
  /** The user's global codebase-index.json (readUserSettings). */
  userSettings?: PluginSettings;
  env: Record<string, string | undefined>;
  exists?: (file: string) => boolean;
  hasPackage?: (venv: string) => boolean;
}

/**
 * Explicit settings win (plugin option > CODEBASE_INDEX_PYTHON > the trusted project file > the user's
 * global file); otherwise the `.venv` of the codebase-index clone the plugin runs from when it really has
 * the package, then the per-user engine environment an npm install sets up on first use. The project's
 * own `.venv` is never a candidate: a repository could commit one whose `bin/python` is any program.
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
    return { python, source: "pythonPath in the trusted .opencode/codebase-index.json" };
  }
  if (lookup.userSettings?.pythonPath) {
    return { python: lookup.userSettings.pythonPath, source: `pythonPath in ${path.join(userConfigDir(lookup.env), USER_SETTINGS_FILE_NAME)}` };
  }
  const venv = path.join(lookup.pluginRepo, ".venv");
  const python = path.join(venv, "bin", "python");
  if (exists(python) && hasPackage(venv)) return { python, source: "the codebase-index repository's .venv" };
  return { python: "python3", source: "the engine environment set up on first use", bootstrap: true };
}

export interface ResolvedSettings {
  /** The interpreter and where it came from. */
  choice: PythonChoice;
  /** Every other setting, merged: plugin options > project file (as trusted) > user file. */
  settings: PluginSettings;
  /** The one note line for tool answers when the project file's pythonPath/serveArgs were withheld. */
  notice?: Notice;
  /** Keys withheld from the untrusted project file. */
  withheld: string[];
}

/**
 * All of the plugin's settings for `project` from their four places (see the module's docstring). Throws
 * nothing: a settings file that cannot be read is returned in `error` and the caller refuses to start.
 */
export function resolveSettings(input: {
  project: string;
  pluginRepo: string;
  options: unknown;
  env?: Env;
  exists?: (file: string) => boolean;
  hasPackage?: (venv: string) => boolean;
}): ResolvedSettings & { error?: string } {
  const env = input.env ?? process.env;
  const options = parseSettings(input.options);
  const user = readUserSettings(env);
  const project = readProjectSettings(input.project, env);
  const error = project.error ?? user.error;
  const layers = [user.settings, project.settings, options];
  const settings: PluginSettings = {};
  for (const layer of layers) {
    for (const key of ["initializeTimeoutMs", "backoffBaseMs", "backoffCapMs", "serveArgs"] as const) {
      if (layer[key] !== undefined) (settings as Record<string, unknown>)[key] = layer[key];
    }
    if (layer.timeouts) settings.timeouts = { ...settings.timeouts, ...layer.timeouts };
  }
  const choice = choosePython({
    project: input.project,
    pluginRepo: input.pluginRepo,
    options,
    projectSettings: project.settings,
    userSettings: user.settings,
    env,
    ...(input.exists ? { exists: input.exists } : {}),
    ...(input.hasPackage ? { hasPackage: input.hasPackage } : {}),
  });
  const notice = withheldNotice(project.withheld);
  return { choice, settings, withheld: project.withheld, ...(notice ? { notice } : {}), ...(error ? { error } : {}) };
}

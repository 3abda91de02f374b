/**
 * codebase-index for OpenCode: search tools backed by a lazily started Python sidecar, slash commands
 * from the repository's `commands/` folder, and file/branch events forwarded to keep the index fresh.
 *
 * Export only the plugin: OpenCode's loader calls every exported function as a plugin.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";

import type { Plugin } from "@opencode-ai/plugin";

import { ensureEngine } from "./bootstrap.js";
import { loadCommands } from "./commands.js";
import { type Notice, resolveSettings } from "./config.js";
import { SidecarClient, SidecarError } from "./sidecar.js";
import { buildTools } from "./tools.js";

/** plugin/dist/index.js -> the repository or npm package root, where `commands/`, `skill/`, `python/` and `.venv/` live. */
const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const FLUSH_MS = 200;

export const CodebaseIndexPlugin: Plugin = async (input, options) => {
  const project = input.worktree && input.worktree !== "/" ? input.worktree : input.directory;
  let client: SidecarClient | undefined;

  // The note line for every tool answer when the project file's pythonPath/serveArgs were withheld (config.ts).
  let notice: Notice | undefined;

  const getClient = (): SidecarClient => {
    if (client) return client;
    const resolved = resolveSettings({ project, pluginRepo: REPO_ROOT, options, env: process.env });
    notice = resolved.notice;
    // Never guess past a broken settings file: it may hold the pythonPath this project needs.
    if (resolved.error) throw new SidecarError("config", `${resolved.error}. Fix the file (JSON with comments is fine) and retry.`);
    const { choice, settings } = resolved;
    client = new SidecarClient({
      python: choice.python,
      pythonSource: choice.source,
      prepare: choice.bootstrap
        ? async (report, signal) => {
            const engine = await ensureEngine({ packageRoot: REPO_ROOT, report, signal });
            return { python: engine.python, source: `the engine environment in ${engine.home}` };
          }
        : undefined,
      project,
      extraArgs: settings.serveArgs,
      timeouts: settings.timeouts,
      initializeTimeoutMs: settings.initializeTimeoutMs,
      backoffBaseMs: settings.backoffBaseMs,
      backoffCapMs: settings.backoffCapMs,
      clientName: "opencode",
    });
    return client;
  };

  const changed = new Set<string>();
  let flushTimer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    flushTimer = undefined;
    if (changed.size === 0) return;
    const paths = [...changed];
    changed.clear();
    client?.notify("notify/filesChanged", { paths });
  };

  return {
    tool: buildTools(getClient, undefined, () => notice),

    config: async (cfg) => {
      const commands = loadCommands(path.join(REPO_ROOT, "commands"));
      cfg.command ??= {};
      for (const [name, spec] of Object.entries(commands)) {
        // A project's own command of the same name wins.
        if (!(name in cfg.command)) cfg.command[name] = spec;
      }
      // The skill folder ships next to the plugin; `skills.paths` exists in 1.18 configs but not in the v1 type.
      const withSkills = cfg as { skills?: { paths?: string[] } };
      withSkills.skills ??= {};
      withSkills.skills.paths ??= [];
      const skillDir = path.join(REPO_ROOT, "skill");
      if (!withSkills.skills.paths.includes(skillDir)) withSkills.skills.paths.push(skillDir);
    },

    event: async ({ event }) => {
      // Events never start the sidecar: it catches up on its own when it next starts.
      if (!client?.running) return;
      if (event.type === "file.edited" || event.type === "file.watcher.updated") {
        changed.add(event.properties.file);
        flushTimer ??= setTimeout(flush, FLUSH_MS);
      } else if (event.type === "vcs.branch.updated") {
        const branch = event.properties.branch;
        client.notify("notify/branchChanged", branch ? { branch } : {});
      }
    },

    dispose: async () => {
      if (flushTimer) clearTimeout(flushTimer);
      flush();
      await client?.dispose();
      client = undefined;
    },
  };
};

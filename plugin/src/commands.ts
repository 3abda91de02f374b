/**
 * Slash commands live as markdown files in the repository's `commands/` folder so they also work when
 * copied to `.opencode/command/`; the plugin registers the same files through the `config` hook.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

export interface CommandSpec {
  template: string;
  description?: string;
  agent?: string;
  model?: string;
  subtask?: boolean;
}

/** Split `---` frontmatter (flat `key: value` lines, as OpenCode's command files use) from the body. */
export function parseCommandMarkdown(text: string): CommandSpec {
  const normalized = text.replace(/\r\n/g, "\n");
  const match = /^---\n([\s\S]*?)\n---\n?([\s\S]*)$/.exec(normalized);
  if (!match) return { template: normalized.trim() };
  const front = match[1] ?? "";
  const spec: CommandSpec = { template: (match[2] ?? "").trim() };
  for (const line of front.split("\n")) {
    const kv = /^([A-Za-z_][\w-]*)\s*:\s*(.*)$/.exec(line);
    if (!kv) continue;
    const key = kv[1] ?? "";
    let value = (kv[2] ?? "").trim();
    if ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'"))) {
      value = value.slice(1, -1);
    }
    if (key === "description" || key === "agent" || key === "model") spec[key] = value;
    else if (key === "subtask") spec.subtask = value === "true";
  }
  return spec;
}

/** Every `<name>.md` in `dir` as a command; an unreadable folder yields none rather than failing start-up. */
export function loadCommands(dir: string): Record<string, CommandSpec> {
  const out: Record<string, CommandSpec> = {};
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith(".md")).sort();
  } catch {
    return out;
  }
  for (const name of names) {
    try {
      const spec = parseCommandMarkdown(readFileSync(path.join(dir, name), "utf8"));
      if (spec.template) out[name.slice(0, -3)] = spec;
    } catch {
      continue;
    }
  }
  return out;
}

/**
 * OpenCode tool definitions built from the generated tool specs, each one a thin call into the sidecar.
 */
import type { ToolContext, ToolDefinition } from "@opencode-ai/plugin";
import { z } from "zod";

import { type Notice, UNTRUSTED_OPENING } from "./config.js";
import { TOOL_DEFINITIONS, toolArgs } from "./generated/tools.js";
import { argsShape } from "./schema.js";
import { NOT_INDEXED, SidecarError, type SidecarClient } from "./sidecar.js";

export interface ToolSpec {
  name: string;
  method: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The tool specs generated from Python (`python -m codebase_index.tools --emit ts`). */
export function generatedToolSpecs(): ToolSpec[] {
  return TOOL_DEFINITIONS.map((d) => ({ ...d }));
}

type ArgShape = Record<string, import("zod").ZodType>;

/**
 * The zod shape for a tool: the generated one when the generator emitted it, else derived from the
 * JSON Schema (so a tool added on the Python side still gets checked arguments).
 */
export function argsFor(spec: ToolSpec): ArgShape {
  const generated = (toolArgs(z) as Record<string, ArgShape | undefined>)[spec.name];
  return generated ?? argsShape(spec.inputSchema);
}

/** Short waits for a briefly held index lock (see CallOptions.busyRetryDelaysMs): about 2 s in all. */
const BUSY_RETRY_DELAYS_MS = [200, 400, 800, 800];

/** Methods that only read: safe to replay once on a fresh sidecar after a crash. */
const NOT_REPLAYED = new Set(["index"]);

/** One readable paragraph for the model: what failed and what to do, never a stack trace. */
export function describeFailure(toolName: string, method: string, error: unknown): string {
  if (error instanceof SidecarError) {
    switch (error.kind) {
      case "rpc":
        if (error.code === -32601) {
          return (
            `${toolName} failed: the codebase-index sidecar does not support \`${method}\`. ` +
            "The plugin and the Python package are probably different versions; update them together."
          );
        }
        if (error.code === -32602) return `${toolName} failed: invalid arguments: ${error.message}`;
        if (error.code === NOT_INDEXED && !/index_codebase|index_status/.test(error.message)) {
          return `${toolName} failed: ${error.message}. Run \`index_codebase\` (or /index) first, then retry.`;
        }
        return `${toolName} failed: ${error.message}`;
      case "cancelled":
        return `${toolName} was cancelled.`;
      default:
        return `${toolName} failed: ${error.message}`;
    }
  }
  const message = error instanceof Error ? error.message : String(error);
  return `${toolName} failed unexpectedly in the codebase-index plugin: ${message}`;
}

function resultText(result: unknown): string {
  if (typeof result === "string") return result;
  if (result && typeof result === "object") {
    const text = (result as { text?: unknown }).text;
    if (typeof text === "string") return text;
  }
  return JSON.stringify(result ?? null);
}

function titleFor(spec: ToolSpec, args: Record<string, unknown>): string {
  const subject = args.query ?? args.path ?? args.target ?? args.symbol;
  return typeof subject === "string" && subject ? `${spec.name}: ${subject.slice(0, 80)}` : spec.name;
}

function stripUndefined(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([, value]) => value !== undefined));
}

export async function runTool(
  client: SidecarClient,
  spec: ToolSpec,
  args: Record<string, unknown>,
  ctx: Pick<ToolContext, "abort" | "metadata">,
): Promise<{ title: string; output: string; metadata: Record<string, unknown> }> {
  const title = titleFor(spec, args);
  try {
    const info = await client.ensureStarted(ctx.abort, (message) => {
      ctx.metadata({ title: `codebase-index set-up: ${message}`, metadata: { phase: "setup", message } });
    });
    if (!info.tools.some((t) => t.method === spec.method || t.name === spec.name)) {
      return {
        title,
        output:
          `${spec.name} is not available: the running codebase-index sidecar (${info.name} ${info.version}) ` +
          "does not offer it. Update the Python package to match the plugin.",
        metadata: { error: "unavailable" },
      };
    }
    const result = await client.call(spec.method, stripUndefined(args), {
      signal: ctx.abort,
      retryOnCrash: !NOT_REPLAYED.has(spec.method),
      busyRetryDelaysMs: BUSY_RETRY_DELAYS_MS,
      onProgress: (p) => {
        const of = p.total > 0 ? ` ${p.done}/${p.total}` : "";
        ctx.metadata({ title: `${spec.name}: ${p.phase}${of}`, metadata: { phase: p.phase, done: p.done, total: p.total } });
      },
    });
    return { title, output: resultText(result), metadata: {} };
  } catch (error) {
    const kind = error instanceof SidecarError ? error.kind : "internal";
    return { title, output: describeFailure(spec.name, spec.method, error), metadata: { error: kind } };
  }
}

/**
 * `output` with the plugin's note line on top (`note: ...`, the engine's form), unless the answer already
 * carries the engine's note on the same file naming every key the plugin's names: one line, not two.
 */
export function withNotice(output: string, notice: Notice | undefined): string {
  if (!notice) return output;
  const named = (line: string): boolean =>
    line.includes(UNTRUSTED_OPENING) && notice.keys.every((key) => new RegExp(`\\b${key}\\b`).test(line));
  return output.split("\n").some(named) ? output : `note: ${notice.line}\n${output}`;
}

/**
 * `{toolName: definition}` for OpenCode's `tool` hook; the sidecar is only started by a call. `notice`
 * gives the line every answer carries while settings of an untrusted project file are withheld.
 */
export function buildTools(
  getClient: () => SidecarClient,
  specs: ToolSpec[] = generatedToolSpecs(),
  notice: () => Notice | undefined = () => undefined,
): Record<string, ToolDefinition> {
  const out: Record<string, ToolDefinition> = {};
  for (const spec of specs) {
    // The literal `tool()` of @opencode-ai/plugin returns (it is the identity), built without importing it.
    const definition: ToolDefinition = {
      description: spec.description,
      args: argsFor(spec),
      execute: async (args, ctx) => {
        let client: SidecarClient;
        try {
          client = getClient();
        } catch (error) {
          const kind = error instanceof SidecarError ? error.kind : "internal";
          const output = withNotice(describeFailure(spec.name, spec.method, error), notice());
          return { title: spec.name, output, metadata: { error: kind } };
        }
        const answer = await runTool(client, spec, args as Record<string, unknown>, ctx);
        return { ...answer, output: withNotice(answer.output, notice()) };
      },
    };
    out[spec.name] = definition;
  }
  return out;
}

// Shared helpers for the Node tests: temporary folders and a fake "python" that runs fake_sidecar.mjs.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const FAKE_SIDECAR = path.join(REPO, "tests", "node", "fake_sidecar.mjs");
export const VENV_PYTHON = path.join(REPO, ".venv", "bin", "python");

export function tempDir(t, prefix = "cbi-node-") {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** An executable that behaves like `<python> -m codebase_index.rpc ...` but runs the fake sidecar. */
export function fakePython(dir, mode = "normal", log = undefined) {
  const file = path.join(dir, `fake-python-${mode}`);
  const env = [`FAKE_MODE=${mode}`, log ? `FAKE_LOG=${JSON.stringify(log)}` : ""].filter(Boolean).join(" ");
  writeFileSync(file, `#!/bin/sh\n${env} exec ${JSON.stringify(process.execPath)} ${JSON.stringify(FAKE_SIDECAR)} "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

/** Messages the fake sidecar received, in order. */
export function received(log) {
  if (!existsSync(log)) return [];
  return readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

export async function waitFor(predicate, { timeoutMs = 5000, stepMs = 20 } = {}) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return true;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return false;
}

/** Minimal stand-in for OpenCode's ToolContext: records metadata updates. */
export function toolContext(signal = new AbortController().signal) {
  const updates = [];
  return {
    updates,
    ctx: {
      sessionID: "s",
      messageID: "m",
      agent: "build",
      directory: "/",
      worktree: "/",
      abort: signal,
      metadata: (input) => updates.push(input),
      ask: async () => undefined,
    },
  };
}

/** A small project whose best answer for "invoice total with tax" is known. */
export function writeSampleProject(root) {
  mkdirSync(path.join(root, "billing"), { recursive: true });
  writeFileSync(
    path.join(root, "billing", "invoices.py"),
    [
      '"""Invoices for the shop."""',
      "",
      "",
      "def compute_invoice_total(lines, tax_rate):",
      '    """Sum the invoice lines and add tax."""',
      "    subtotal = sum(line.price * line.quantity for line in lines)",
      "    return subtotal * (1 + tax_rate)",
      "",
    ].join("\n"),
  );
  writeFileSync(
    path.join(root, "render.ts"),
    "export function renderBanner(title: string): string {\n  return `== ${title} ==`;\n}\n",
  );
  writeFileSync(path.join(root, "README.md"), "# Shop\n\nA tiny shop used in tests.\n");
}

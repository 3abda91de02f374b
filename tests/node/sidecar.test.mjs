// The sidecar client against a fake sidecar: framing, id matching, progress, cancel, timeouts, restarts.
import assert from "node:assert/strict";
import { test } from "node:test";

import path from "node:path";

import * as sidecar from "../../plugin/dist/sidecar.js";
import { fakePython, received, REPO, tempDir, waitFor } from "./helpers.mjs";

const { backoffDelay, SidecarClient, SidecarError } = sidecar;

function client(t, python, extra = {}) {
  const c = new SidecarClient({ python, project: t.dir, backoffBaseMs: 10, backoffCapMs: 50, ...extra });
  t.after(() => c.dispose());
  return c;
}

test("starts lazily, initializes with --project, and matches out-of-order answers by id", async (t) => {
  t.dir = tempDir(t);
  const log = `${t.dir}/log.jsonl`;
  const c = client(t, fakePython(t.dir, "normal", log));
  assert.equal(c.running, false);
  assert.equal(c.starts, 0);
  const [slow, fast] = await Promise.all([c.call("search", { query: "slow" }), c.call("search", { query: "fast" })]);
  assert.equal(slow.text, "slow result");
  assert.match(fast.text, /^results for fast/);
  assert.equal(c.starts, 1);
  assert.deepEqual(c.serverInfo.index.args, ["-m", "codebase_index.rpc", "--project", t.dir]);
  const methods = received(log).map((m) => m.method);
  assert.deepEqual(methods, ["initialize", "search", "search"]);
  assert.ok(c.stderr.some((line) => line.includes("fake sidecar started")));
  assert.ok(c.stderr.some((line) => line.includes("stray non-JSON line")));
});

test("the sidecar runs outside the project, with no working folder on sys.path (a repository's argparse.py must not run)", async (t) => {
  t.dir = tempDir(t);
  const c = client(t, fakePython(t.dir));
  await c.ensureStarted();
  const { cwd, safePath } = c.serverInfo.index;
  assert.equal(cwd, sidecar.SIDECAR_CWD);
  assert.equal(cwd, path.join(REPO, "plugin", "dist"));
  assert.ok(!cwd.startsWith(t.dir), `the sidecar ran in ${cwd}, inside the project`);
  assert.equal(safePath, "1", "PYTHONSAFEPATH keeps the working folder off sys.path in the sidecar and its children");
});

test("relays $/progress to the caller and rpc errors keep their code", async (t) => {
  t.dir = tempDir(t);
  const c = client(t, fakePython(t.dir));
  const seen = [];
  const result = await c.call("index", {}, { onProgress: (p) => seen.push(`${p.phase} ${p.done}/${p.total}`) });
  assert.equal(result.text, "indexed 3 files");
  assert.deepEqual(seen, ["chunk 0/3", "chunk 1/3", "chunk 2/3", "chunk 3/3"]);
  await assert.rejects(c.call("boom", {}), (e) => e instanceof SidecarError && e.kind === "rpc" && e.code === -32001);
});

test("an index-busy answer is retried after the given delays, then reported", async (t) => {
  t.dir = tempDir(t);
  const c = client(t, fakePython(t.dir));
  const ok = await c.call("busy", { failTimes: 2 }, { busyRetryDelaysMs: [10, 10, 10] });
  assert.equal(ok.text, "ok after 2 busy answers");
  await assert.rejects(c.call("busy", { failTimes: 99 }, { busyRetryDelaysMs: [10, 10] }), (e) => e.code === -32001);
  await assert.rejects(c.call("busy", { failTimes: 99 }), (e) => e.code === -32001, "no retry unless asked");
});

test("aborting a call sends $/cancelRequest with its id", async (t) => {
  t.dir = tempDir(t);
  const log = `${t.dir}/log.jsonl`;
  const c = client(t, fakePython(t.dir, "normal", log));
  const abort = new AbortController();
  const call = c.call("index", { wait: true }, { signal: abort.signal, onProgress: () => abort.abort() });
  await assert.rejects(call, (e) => e.kind === "cancelled");
  assert.ok(await waitFor(() => received(log).some((m) => m.method === "$/cancelRequest")));
  const msgs = received(log);
  const index = msgs.find((m) => m.method === "index");
  const cancel = msgs.find((m) => m.method === "$/cancelRequest");
  assert.equal(cancel.params.id, index.id);
  assert.equal(cancel.id, undefined, "cancel is a notification");
  assert.match((await c.call("status", {})).text, /fake status/);
});

test("a hung call times out with a readable error and the next call gets a fresh sidecar", async (t) => {
  t.dir = tempDir(t);
  const c = client(t, fakePython(t.dir, "hang-search"), { timeouts: { search: 300 } });
  const first = await c.ensureStarted();
  assert.equal(first.name, "fake");
  const pid = c.pid;
  await assert.rejects(c.call("search", { query: "x" }), (e) => {
    assert.equal(e.kind, "timeout");
    assert.match(e.message, /did not answer `search` within 300ms/);
    assert.doesNotMatch(e.message, /\n\s+at /);
    return true;
  });
  assert.match((await c.call("status", {})).text, /fake status/);
  assert.notEqual(c.pid, pid);
  assert.equal(c.starts, 2);
});

test("a sidecar that never answers initialize gives a readable timeout", async (t) => {
  t.dir = tempDir(t);
  const c = client(t, fakePython(t.dir, "hang"), { initializeTimeoutMs: 300 });
  await assert.rejects(c.call("status", {}), (e) => {
    assert.equal(e.kind, "timeout");
    assert.match(e.message, /did not answer `initialize` within 300ms/);
    assert.match(e.message, /codebase_index package installed/);
    return true;
  });
});

test("a killed sidecar is restarted and read-only calls are replayed once", async (t) => {
  t.dir = tempDir(t);
  const c = client(t, fakePython(t.dir));
  await c.call("status", {});
  const pid = c.pid;
  process.kill(pid, "SIGKILL");
  assert.ok(await waitFor(() => !c.running));
  const result = await c.call("search", { query: "again" });
  assert.match(result.text, /^results for again/);
  assert.notEqual(c.pid, pid);
  assert.equal(c.starts, 2);
});

test("a crash during a call is reported readably when not replayed, with stderr", async (t) => {
  t.dir = tempDir(t);
  const c = client(t, fakePython(t.dir, "crash-search"));
  await assert.rejects(c.call("search", { query: "x" }), (e) => {
    assert.equal(e.kind, "exited");
    assert.match(e.message, /exited with code 5; it will be restarted on the next call/);
    assert.match(e.message, /fake sidecar started/);
    return true;
  });
  // With replay the second attempt also crashes, so the error still surfaces (no infinite retry).
  await assert.rejects(c.call("search", { query: "x" }, { retryOnCrash: true }), (e) => e.kind === "exited");
  assert.equal(c.starts, 3);
});

test("a second sidecar for a locked index is reported as such", async (t) => {
  t.dir = tempDir(t);
  const c = client(t, fakePython(t.dir, "locked"));
  await assert.rejects(c.call("status", {}), (e) => {
    assert.equal(e.kind, "locked");
    assert.match(e.message, /already serves this project's index/);
    return true;
  });
});

test("a missing interpreter is a readable spawn error, not a stack trace", async (t) => {
  t.dir = tempDir(t);
  const c = client(t, `${t.dir}/no/such/python`, { pythonSource: "plugin option pythonPath" });
  await assert.rejects(c.call("status", {}), (e) => {
    assert.equal(e.kind, "spawn");
    assert.match(e.message, /Python interpreter not found \(.*no\/such\/python, from plugin option pythonPath\)/);
    assert.match(e.message, /CODEBASE_INDEX_PYTHON/);
    return true;
  });
});

test("notifications are dropped while stopped and delivered while running", async (t) => {
  t.dir = tempDir(t);
  const log = `${t.dir}/log.jsonl`;
  const c = client(t, fakePython(t.dir, "normal", log));
  assert.equal(c.notify("notify/filesChanged", { paths: ["a.py"] }), false);
  assert.equal(c.starts, 0, "a notification must not start the sidecar");
  await c.ensureStarted();
  assert.equal(c.notify("notify/filesChanged", { paths: ["a.py"] }), true);
  assert.ok(await waitFor(() => received(log).some((m) => m.method === "notify/filesChanged")));
});

test("dispose sends shutdown and the process exits", async (t) => {
  t.dir = tempDir(t);
  const log = `${t.dir}/log.jsonl`;
  const c = new SidecarClient({ python: fakePython(t.dir, "normal", log), project: t.dir });
  await c.ensureStarted();
  const pid = c.pid;
  await c.dispose();
  assert.equal(c.running, false);
  assert.ok(received(log).some((m) => m.method === "shutdown"));
  assert.throws(() => process.kill(pid, 0), /ESRCH/);
  await assert.rejects(c.call("status", {}), (e) => e.kind === "disposed");
});

test("dispose kills a sidecar that ignores shutdown", async (t) => {
  t.dir = tempDir(t);
  const c = new SidecarClient({ python: fakePython(t.dir, "hang-search"), project: t.dir, shutdownTimeoutMs: 200 });
  await c.ensureStarted();
  const pending = c.call("search", { query: "x" }).catch((e) => e);
  await c.dispose();
  assert.equal((await pending).kind, "disposed");
  assert.equal(c.running, false);
});

test("backoff doubles from the base and stops at the cap", () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 40].map((n) => backoffDelay(n, 100, 1000)), [0, 100, 200, 400, 800, 1000, 1000]);
});

test("concurrent first calls share one start and all wait for initialize", async (t) => {
  t.dir = tempDir(t);
  const log = `${t.dir}/log.jsonl`;
  const c = client(t, fakePython(t.dir, "normal", log));
  const results = await Promise.all([1, 2, 3].map((n) => c.call("search", { query: `q${n}` })));
  assert.deepEqual(results.map((r) => r.text.split(" pid")[0]), ["results for q1", "results for q2", "results for q3"]);
  assert.equal(c.starts, 1);
  assert.equal(received(log)[0].method, "initialize", "nothing is sent before initialize");
});

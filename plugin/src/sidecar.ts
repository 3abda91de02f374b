/**
 * JSON-RPC 2.0 client for the Python sidecar (`python -m codebase_index.rpc`, the same server as
 * `codebase-index serve`), one JSON object per line over stdio; the contract is plugin/PROTOCOL.md.
 *
 * The sidecar is started lazily (OpenCode instantiates plugins for `opencode debug ...` too), restarted
 * after a crash with capped exponential backoff, and every failure becomes a `SidecarError` whose message
 * is meant to be shown to the model or user as is.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const PROTOCOL_VERSION = 1;

/**
 * Where the sidecar runs: this module's own folder (plugin/dist, only .js files), never the project.
 * `python -m` puts the working folder first on sys.path, and so do the `-c` children that
 * multiprocessing's spawn start method launches, so a project folder there would let a repository's
 * `argparse.py` or `multiprocessing/__init__.py` run in place of the standard library's.
 */
export const SIDECAR_CWD = path.dirname(fileURLToPath(import.meta.url));

/** What `initialize` returns; only the fields the plugin relies on are typed. */
export interface InitializeResult {
  name: string;
  version: string;
  protocolVersion: number;
  tools: Array<{ name: string; method: string; description?: string; inputSchema?: unknown }>;
  index?: unknown;
}

export interface ProgressEvent {
  phase: string;
  done: number;
  total: number;
}

export interface CallOptions {
  /** Milliseconds before the call is abandoned; defaults to the per-method table. */
  timeoutMs?: number;
  signal?: AbortSignal;
  onProgress?: (event: ProgressEvent) => void;
  /** Retry once on a fresh sidecar if the process died during the call (safe for read-only methods). */
  retryOnCrash?: boolean;
  /**
   * Delays (ms) between retries while the sidecar answers "index busy" (-32001). The index lock is also
   * taken briefly by background work (a fresh index's schema set-up, a debounced refresh after file
   * events), so a short bounded wait turns that into success instead of an error; long runs still fail.
   */
  busyRetryDelaysMs?: number[];
}

export interface SidecarOptions {
  python: string;
  /**
   * Called once before the first start when set: makes the interpreter ready (the first-use engine
   * set-up of an npm install) and returns it; `report` shows progress. Its error message is shown as is.
   */
  prepare?: (report: (message: string) => void, signal?: AbortSignal) => Promise<{ python: string; source: string }>;
  /** Where the interpreter came from, for error messages ("env CODEBASE_INDEX_PYTHON", ...). */
  pythonSource?: string;
  project: string;
  /** The sidecar's working folder (default SIDECAR_CWD); never the project, which is untrusted content. */
  cwd?: string;
  /** Extra arguments after `--project <project>` (e.g. `--index-dir DIR`; give paths absolute). */
  extraArgs?: string[];
  env?: Record<string, string | undefined>;
  clientName?: string;
  clientVersion?: string;
  /** Per-method timeouts in ms, merged over DEFAULT_TIMEOUTS. */
  timeouts?: Record<string, number>;
  initializeTimeoutMs?: number;
  backoffBaseMs?: number;
  backoffCapMs?: number;
  shutdownTimeoutMs?: number;
}

/** Indexing can take many minutes on a large repository; everything else should be quick. */
export const DEFAULT_TIMEOUTS: Readonly<Record<string, number>> = {
  index: 30 * 60_000,
  search: 60_000,
  peek: 30_000,
  status: 15_000,
  health_check: 30_000,
  metrics: 15_000,
  logs: 15_000,
  shutdown: 3_000,
};
const FALLBACK_TIMEOUT_MS = 60_000;

export type SidecarErrorKind =
  | "spawn"
  | "exited"
  | "timeout"
  | "cancelled"
  | "rpc"
  | "protocol"
  | "disposed"
  | "locked"
  | "config"
  | "bootstrap";

/** JSON-RPC codes from plugin/PROTOCOL.md that the plugin treats specially. */
export const SIDECAR_LOCKED = -32002;
export const NOT_INDEXED = -32003;
export const INDEX_BUSY = -32001;
/** Exit status of a sidecar that found another one serving the same index. */
const EXIT_LOCKED = 3;
const LOCKED_MESSAGE =
  "another codebase-index sidecar (probably another OpenCode window on this project) already serves this " +
  "project's index, so this one cannot start. Use that window, or close it and try again.";

/** A failure with a message that explains what happened and what to do, never a stack trace. */
export class SidecarError extends Error {
  readonly kind: SidecarErrorKind;
  readonly code: number | undefined;
  readonly data: unknown;

  constructor(kind: SidecarErrorKind, message: string, code?: number, data?: unknown) {
    super(message);
    this.name = "SidecarError";
    this.kind = kind;
    this.code = code;
    this.data = data;
  }
}

interface Pending {
  session: Session;
  method: string;
  resolve: (value: unknown) => void;
  reject: (error: SidecarError) => void;
  timer: NodeJS.Timeout;
  onProgress: ((event: ProgressEvent) => void) | undefined;
  cleanup: () => void;
}

interface Session {
  child: ChildProcessWithoutNullStreams;
  exited: boolean;
  exitPromise: Promise<void>;
  info: InitializeResult | undefined;
  /** Set when the session is abandoned (timed out); its process is being killed. */
  retired: boolean;
  buffer: string;
}

const STDERR_TAIL_LINES = 30;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new SidecarError("cancelled", "cancelled while waiting to retry"));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new SidecarError("cancelled", "cancelled while waiting to retry"));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Delay before restart number `failures` (1-based): base, 2*base, 4*base, ... capped. */
export function backoffDelay(failures: number, baseMs: number, capMs: number): number {
  if (failures <= 0) return 0;
  return Math.min(capMs, baseMs * 2 ** Math.min(failures - 1, 30));
}

function seconds(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10}s` : `${ms}ms`;
}

export class SidecarClient {
  private readonly opts: SidecarOptions;
  private session: Session | undefined;
  private starting: Promise<Session> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private failures = 0;
  private lastFailureAt = 0;
  private disposed = false;
  /** Exits of killed sessions; a new sidecar waits for them because the Python side holds a per-index lock. */
  private retiring = new Set<Promise<void>>();
  private stderrTail: string[] = [];
  /** How many sidecar processes were started; exposed for tests and diagnostics. */
  starts = 0;
  private prepared = false;
  private statusListener: ((message: string) => void) | undefined;

  constructor(opts: SidecarOptions) {
    this.opts = opts;
  }

  get running(): boolean {
    return this.session !== undefined && !this.session.exited && !this.session.retired;
  }

  get pid(): number | undefined {
    return this.running ? this.session?.child.pid : undefined;
  }

  get serverInfo(): InitializeResult | undefined {
    return this.session?.info;
  }

  /** Last lines the sidecar wrote to stderr (its logs), newest last. */
  get stderr(): string[] {
    return [...this.stderrTail];
  }

  timeoutFor(method: string): number {
    return this.opts.timeouts?.[method] ?? DEFAULT_TIMEOUTS[method] ?? FALLBACK_TIMEOUT_MS;
  }

  /** Start the sidecar if needed and return its `initialize` answer; `onStatus` sees set-up progress. */
  async ensureStarted(signal?: AbortSignal, onStatus?: (message: string) => void): Promise<InitializeResult> {
    if (onStatus) this.statusListener = onStatus;
    const session = await this.getSession(signal);
    if (!session.info) throw new SidecarError("protocol", "the sidecar started but did not initialize");
    return session.info;
  }

  async call(method: string, params: unknown, options: CallOptions = {}): Promise<unknown> {
    const delays = [...(options.busyRetryDelaysMs ?? [])];
    let replayed = false;
    for (;;) {
      try {
        return await this.callOnce(method, params, options);
      } catch (error) {
        if (!(error instanceof SidecarError) || this.disposed) throw error;
        if (options.retryOnCrash && error.kind === "exited" && !replayed) {
          replayed = true;
          continue;
        }
        const delay = error.code === INDEX_BUSY ? delays.shift() : undefined;
        if (delay === undefined) throw error;
        await sleep(delay, options.signal);
      }
    }
  }

  /** Fire-and-forget notification; dropped when the sidecar is not running (events must not start it). */
  notify(method: string, params: unknown): boolean {
    const session = this.session;
    if (!session || session.exited || session.retired || !session.info) return false;
    return this.write(session, { jsonrpc: "2.0", method, params });
  }

  /** Ask the sidecar to shut down, then make sure the process is gone. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const session = this.session ?? (await this.starting?.catch(() => undefined));
    if (!session || session.exited) {
      this.rejectAll(new SidecarError("disposed", "the codebase-index plugin is shutting down"));
      return;
    }
    const grace = this.opts.shutdownTimeoutMs ?? 3_000;
    if (session.info) {
      await this.request(session, "shutdown", {}, { timeoutMs: grace }).catch(() => undefined);
    }
    this.rejectAll(new SidecarError("disposed", "the codebase-index plugin is shutting down"));
    session.child.stdin.end();
    if (!(await this.waitExit(session, grace))) {
      session.child.kill("SIGTERM");
      if (!(await this.waitExit(session, grace))) session.child.kill("SIGKILL");
    }
  }

  private async waitExit(session: Session, ms: number): Promise<boolean> {
    if (session.exited) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    const done = await Promise.race([session.exitPromise.then(() => true as const), timeout]);
    clearTimeout(timer);
    return done;
  }

  private async callOnce(method: string, params: unknown, options: CallOptions): Promise<unknown> {
    const session = await this.getSession(options.signal);
    return await this.request(session, method, params, options);
  }

  private async getSession(signal?: AbortSignal): Promise<Session> {
    if (this.disposed) throw new SidecarError("disposed", "the codebase-index plugin is shutting down");
    if (this.session && !this.session.exited && !this.session.retired) return this.session;
    if (!this.starting) {
      this.starting = this.start(signal).finally(() => {
        this.starting = undefined;
      });
    }
    return await this.starting;
  }

  private async start(signal?: AbortSignal): Promise<Session> {
    const base = this.opts.backoffBaseMs ?? 250;
    const cap = this.opts.backoffCapMs ?? 8_000;
    const wait = this.lastFailureAt + backoffDelay(this.failures, base, cap) - Date.now();
    if (wait > 0) await sleep(wait, signal);
    if (this.retiring.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 5_000);
      });
      await Promise.race([Promise.all(this.retiring), limit]);
      clearTimeout(timer);
    }

    if (this.opts.prepare && !this.prepared) {
      try {
        const ready = await this.opts.prepare((message) => {
          try {
            this.statusListener?.(message);
          } catch {
            // A failing progress display must not fail the set-up.
          }
        }, signal);
        this.opts.python = ready.python;
        this.opts.pythonSource = ready.source;
        this.prepared = true;
      } catch (error) {
        this.recordFailure();
        throw new SidecarError("bootstrap", error instanceof Error ? error.message : String(error));
      }
    }
    // `-m codebase_index.rpc` is `codebase-index serve` without the CLI's imports: a faster cold start.
    const args = ["-m", "codebase_index.rpc", "--project", this.opts.project, ...(this.opts.extraArgs ?? [])];
    const session = await this.spawnSession(args);
    const initTimeout = this.opts.initializeTimeoutMs ?? 30_000;
    try {
      const info = (await this.request(
        session,
        "initialize",
        { clientName: this.opts.clientName ?? "codebase-index-opencode", clientVersion: this.opts.clientVersion ?? "0" },
        { timeoutMs: initTimeout, signal },
      )) as InitializeResult;
      if (!info || typeof info !== "object" || !Array.isArray(info.tools)) {
        throw new SidecarError("protocol", "the sidecar answered `initialize` without a tool list");
      }
      if (info.protocolVersion !== PROTOCOL_VERSION) {
        throw new SidecarError(
          "protocol",
          `the sidecar speaks protocol version ${String(info.protocolVersion)}, this plugin speaks ${PROTOCOL_VERSION}. ` +
            "Update the plugin and the Python package together.",
        );
      }
      session.info = info;
      // Published only once initialized, so concurrent callers wait on `starting` instead.
      this.session = session;
      return session;
    } catch (error) {
      this.retire(session, new SidecarError("protocol", "the sidecar failed to initialize"));
      if (error instanceof SidecarError && error.code === SIDECAR_LOCKED) {
        throw new SidecarError("locked", LOCKED_MESSAGE, SIDECAR_LOCKED);
      }
      if (error instanceof SidecarError && error.kind === "timeout") {
        throw new SidecarError(
          "timeout",
          `the codebase-index sidecar (${this.describePython()}) started but did not answer \`initialize\` within ` +
            `${seconds(initTimeout)}. Check that this interpreter has the codebase_index package installed.` +
            this.stderrHint(),
        );
      }
      throw error;
    }
  }

  private describePython(): string {
    return this.opts.pythonSource ? `${this.opts.python}, from ${this.opts.pythonSource}` : this.opts.python;
  }

  private stderrHint(): string {
    const tail = this.stderrTail.slice(-8).join("\n").trim();
    return tail ? `\nLast sidecar stderr:\n${tail}` : "";
  }

  private recordFailure(): void {
    this.failures += 1;
    this.lastFailureAt = Date.now();
  }

  private spawnSession(args: string[]): Promise<Session> {
    return new Promise((resolve, reject) => {
      let child: ChildProcessWithoutNullStreams;
      try {
        child = spawn(this.opts.python, args, {
          cwd: this.opts.cwd ?? SIDECAR_CWD,
          // PYTHONSAFEPATH (3.11+): no working folder on sys.path at all, in the sidecar or its children.
          env: { ...process.env, PYTHONUNBUFFERED: "1", PYTHONSAFEPATH: "1", ...(this.opts.env ?? {}) },
          stdio: ["pipe", "pipe", "pipe"],
        });
      } catch (error) {
        this.recordFailure();
        reject(this.spawnError(error));
        return;
      }
      this.starts += 1;
      let resolveExit: () => void = () => undefined;
      const session: Session = {
        child,
        exited: false,
        exitPromise: new Promise<void>((r) => {
          resolveExit = r;
        }),
        info: undefined,
        retired: false,
        buffer: "",
      };
      let spawned = false;
      child.once("spawn", () => {
        spawned = true;
        resolve(session);
      });
      child.once("error", (error) => {
        if (!spawned) {
          session.exited = true;
          resolveExit();
          this.recordFailure();
          reject(this.spawnError(error));
        }
      });
      child.stdin.on("error", () => undefined);
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => this.onStdout(session, chunk));
      child.stderr.setEncoding("utf8");
      child.stderr.on("data", (chunk: string) => this.onStderr(chunk));
      child.once("exit", (code, signal) => {
        session.exited = true;
        resolveExit();
        if (!spawned) return;
        if (!this.disposed && !session.retired) this.recordFailure();
        if (code === EXIT_LOCKED) {
          this.rejectAll(new SidecarError("locked", LOCKED_MESSAGE, SIDECAR_LOCKED), session);
          return;
        }
        const how = signal ? `was killed by ${signal}` : `exited with code ${String(code)}`;
        this.rejectAll(
          new SidecarError(
            "exited",
            `the codebase-index sidecar ${how}; it will be restarted on the next call.${this.stderrHint()}`,
          ),
          session,
        );
      });
    });
  }

  private spawnError(error: unknown): SidecarError {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    const where = this.describePython();
    if (code === "ENOENT") {
      return new SidecarError(
        "spawn",
        `could not start the codebase-index sidecar: Python interpreter not found (${where}). ` +
          "Set `pythonPath` in ~/.config/opencode/codebase-index.json or the CODEBASE_INDEX_PYTHON environment variable " +
          "to a Python that has codebase-index installed (`pip install local-codebase-index`, or `make install` in its repository).",
      );
    }
    if (code === "EACCES") {
      return new SidecarError(
        "spawn",
        `could not start the codebase-index sidecar: ${where} is not executable (EACCES). Point pythonPath at a Python interpreter.`,
      );
    }
    const message = error instanceof Error ? error.message : String(error);
    return new SidecarError("spawn", `could not start the codebase-index sidecar (${where}): ${message}`);
  }

  private onStderr(chunk: string): void {
    const lines = chunk.split("\n").filter((line) => line.trim() !== "");
    this.stderrTail.push(...lines);
    if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail = this.stderrTail.slice(-STDERR_TAIL_LINES);
  }

  private onStdout(session: Session, chunk: string): void {
    if (session.retired) return;
    session.buffer += chunk;
    let newline = session.buffer.indexOf("\n");
    while (newline >= 0) {
      const line = session.buffer.slice(0, newline).trim();
      session.buffer = session.buffer.slice(newline + 1);
      if (line) this.onLine(line);
      newline = session.buffer.indexOf("\n");
    }
  }

  private onLine(line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      // Stray prints (a library writing to stdout) must not kill the session; keep them for diagnostics.
      this.onStderr(`[stdout, not JSON] ${line.slice(0, 200)}`);
      return;
    }
    if (!message || typeof message !== "object") return;
    const msg = message as { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown };
    if (typeof msg.method === "string") {
      if (msg.method === "$/progress") this.onProgress(msg.params);
      return;
    }
    if (typeof msg.id !== "number") return;
    const pending = this.pending.get(msg.id);
    if (!pending) return;
    this.settle(msg.id);
    if (msg.error && typeof msg.error === "object") {
      const err = msg.error as { code?: unknown; message?: unknown; data?: unknown };
      const code = typeof err.code === "number" ? err.code : -32603;
      const text = typeof err.message === "string" ? err.message : "unknown error";
      pending.reject(new SidecarError(code === -32800 ? "cancelled" : "rpc", text, code, err.data));
      return;
    }
    if (this.failures > 0 && pending.method !== "initialize") this.failures = 0;
    pending.resolve(msg.result);
  }

  private onProgress(params: unknown): void {
    if (!params || typeof params !== "object") return;
    const p = params as { requestId?: unknown; phase?: unknown; done?: unknown; total?: unknown };
    if (typeof p.requestId !== "number") return;
    const pending = this.pending.get(p.requestId);
    if (!pending?.onProgress) return;
    try {
      pending.onProgress({
        phase: typeof p.phase === "string" ? p.phase : "working",
        done: typeof p.done === "number" ? p.done : 0,
        total: typeof p.total === "number" ? p.total : 0,
      });
    } catch {
      // A failing progress display must not fail the call.
    }
  }

  private settle(id: number): Pending | undefined {
    const pending = this.pending.get(id);
    if (!pending) return undefined;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    pending.cleanup();
    return pending;
  }

  /** Fail the calls waiting on `session` (all sessions when omitted). */
  private rejectAll(error: SidecarError, session?: Session): void {
    for (const [id, pending] of [...this.pending.entries()]) {
      if (!session || pending.session === session) this.settle(id)?.reject(error);
    }
  }

  /** Abandon a stuck session: later calls start a fresh process instead of queueing behind it. */
  private retire(session: Session, error: SidecarError): void {
    if (session.retired) return;
    session.retired = true;
    if (this.session === session) this.session = undefined;
    this.recordFailure();
    this.rejectAll(error, session);
    if (!session.exited) {
      const exit = session.exitPromise.then(() => {
        this.retiring.delete(exit);
      });
      this.retiring.add(exit);
      session.child.kill("SIGKILL");
    }
  }

  private write(session: Session, message: object): boolean {
    if (session.exited || !session.child.stdin.writable) return false;
    session.child.stdin.write(`${JSON.stringify(message)}\n`);
    return true;
  }

  private request(session: Session, method: string, params: unknown, options: CallOptions): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (session.exited || session.retired) {
        reject(new SidecarError("exited", "the codebase-index sidecar is not running; it will be restarted on the next call."));
        return;
      }
      if (options.signal?.aborted) {
        reject(new SidecarError("cancelled", `\`${method}\` was cancelled`));
        return;
      }
      const id = this.nextId++;
      const timeoutMs = options.timeoutMs ?? this.timeoutFor(method);
      const onAbort = (): void => {
        if (!this.settle(id)) return;
        this.write(session, { jsonrpc: "2.0", method: "$/cancelRequest", params: { id } });
        reject(new SidecarError("cancelled", `\`${method}\` was cancelled`));
      };
      const timer = setTimeout(() => {
        if (!this.settle(id)) return;
        this.write(session, { jsonrpc: "2.0", method: "$/cancelRequest", params: { id } });
        const error = new SidecarError(
          "timeout",
          `the codebase-index sidecar did not answer \`${method}\` within ${seconds(timeoutMs)}, so it was ` +
            "stopped; the next call starts a fresh one. If this repeats, check `index_logs` or the project size.",
        );
        reject(error);
        // A sidecar that misses a deadline is stuck or swamped; a fresh one serves the next call.
        if (method !== "initialize" && method !== "shutdown") this.retire(session, error);
      }, timeoutMs);
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        session,
        method,
        resolve,
        reject,
        timer,
        onProgress: options.onProgress,
        cleanup: () => options.signal?.removeEventListener("abort", onAbort),
      });
      if (!this.write(session, { jsonrpc: "2.0", id, method, params: params ?? {} })) {
        this.settle(id);
        reject(new SidecarError("exited", "the codebase-index sidecar closed its input; it will be restarted on the next call."));
      }
    });
  }
}

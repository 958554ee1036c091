/**
 * Test/benchmark harness that provides a real Redis-protocol server.
 *
 * If the environment variable named by {@linkcode ServerOptions.urlEnv}
 * (default `KVID_TEST_URL`) is set, that server is used as-is. Otherwise a
 * throwaway server is started on a free 127.0.0.1 port with its own temporary
 * data directory: the binary `KVID_TEST_SERVER` names (`redis-server`,
 * `valkey-server` or `kvrocks`; CI runs the server-facing tests once with each),
 * else `kvrocks` when on PATH, else `redis-server`. `kvrocks` is taken from PATH,
 * else from `../shared/bin/kvrocks` beside the repository
 * ({@linkcode kvrocksBinary}). A named binary that cannot be started fails the
 * test, never skips it.
 *
 * @module
 */

/** Options for {@linkcode startServer}. */
export interface ServerOptions {
  /**
   * Durability of the started server. `"aof"` makes every write durable
   * (redis: `appendonly yes` + `appendfsync always`; kvrocks:
   * `rocksdb.write_options.sync yes`) so data survives `kill()` + `restart()`.
   * `"none"` (the default) still runs Redis and Valkey with `appendonly yes`
   * (`appendfsync everysec`) and Kvrocks with its write-ahead log (`sync no`),
   * as the library wants, but `restart()` wipes the data directory: the server
   * comes back empty. `"snapshots"`: Redis and Valkey with `appendonly no` (and
   * no `save` schedule unless set with `CONFIG SET save`), Kvrocks with
   * `rocksdb.write_options.disable_wal yes`: what a generator's default
   * (`durability: "strict"`) refuses; `restart()` keeps the data directory, so
   * it loads a `SAVE`d dump (Kvrocks: what RocksDB flushed). `"everysec"`: as
   * `"none"` (the servers' durable defaults: `appendfsync everysec`, Kvrocks
   * `sync no`), but `restart()` keeps the data.
   */
  persistence?: "none" | "snapshots" | "everysec" | "aof";
  /** Password required by the server (`requirepass`). */
  password?: string;
  /** Fixed port to listen on. Defaults to a free port chosen at start. */
  port?: number;
  /**
   * Name of the environment variable holding the URL of an existing server
   * to use instead of starting one. Defaults to `"KVID_TEST_URL"`.
   */
  urlEnv?: string;
  /**
   * Keep the temporary data directory when `stop()` is called (it is
   * removed by default). The directory path is available as `dataDir`.
   */
  keepData?: boolean;
  /**
   * Commands the server does not offer (renamed away, as some managed Redis do with `EVAL` and
   * `EVALSHA`): calling one gets `unknown command`.
   */
  disable?: string[];
  /**
   * The binary to start, whatever `KVID_TEST_SERVER` says and even when the `urlEnv` variable
   * names a server (bench/report.ts runs its side-by-side groups on each).
   */
  server?: "redis-server" | "valkey-server" | "kvrocks";
  /**
   * More lines of a Kvrocks server's configuration file (e.g. `namespace.a token-a`), after
   * the harness's own; ignored by Redis and Valkey.
   */
  kvrocksConfig?: string[];
}

/** Options for {@linkcode TestServer.stop}. */
export interface StopOptions {
  /** Override {@linkcode ServerOptions.keepData} for this call. */
  keepData?: boolean;
}

/** A running (or stopped, restartable) server handle. */
export interface TestServer extends AsyncDisposable {
  /** Connection URL, `redis://[:password@]host:port`. */
  readonly url: string;
  /** Host the server listens on. */
  readonly host: string;
  /** Port the server listens on. */
  readonly port: number;
  /** Which server is behind `url`; `"external"` when taken from the env. */
  readonly kind: ServerKind | "external";
  /** Server version as reported by `INFO server`. */
  readonly version: string;
  /** Data directory of a started server; `undefined` for external ones. */
  readonly dataDir: string | undefined;
  /**
   * Stop the server: SIGTERM, wait up to 5 s for exit, then SIGKILL.
   * Removes the data directory unless `keepData`. Safe to call repeatedly
   * (also after `kill()`, to clean up). No-op for external servers.
   */
  stop(options?: StopOptions): Promise<void>;
  /** SIGKILL the server (simulated crash); the data directory is kept. */
  kill(): Promise<void>;
  /**
   * Start the server again on the same port and data directory (stopping it
   * first if it is still running). With `persistence: "aof"` the data
   * survives. Throws for external servers.
   */
  restart(): Promise<void>;
}

/** Which server binary a local {@linkcode TestServer} runs. */
export type ServerKind = "redis" | "valkey" | "kvrocks";

/** The server kinds `KVID_TEST_SERVER` may name, by binary. */
const NAMED: Record<string, ServerKind> = {
  "redis-server": "redis",
  "valkey-server": "valkey",
  kvrocks: "kvrocks",
};

/** The kind `KVID_TEST_SERVER` names, or undefined when unset. */
function namedKind(): ServerKind | undefined {
  const named = Deno.env.get("KVID_TEST_SERVER");
  if (named === undefined || named === "") return undefined;
  const kind = NAMED[named];
  if (kind === undefined) {
    throw new Error(
      `KVID_TEST_SERVER must be redis-server, valkey-server or kvrocks, got ${named}`,
    );
  }
  return kind;
}

/**
 * True when `KVID_TEST_SERVER=kvrocks`: the pass that runs the server-facing tests on Kvrocks.
 * Tests that need what Kvrocks lacks (Sentinel, Cluster, `WAIT`, `WAITAOF`, Redis' `CONFIG`
 * settings) are ignored there by name ({@linkcode redisOnly}).
 */
export const KVROCKS_PASS: boolean = Deno.env.get("KVID_TEST_SERVER") === "kvrocks";

/**
 * The `name` and `ignore` of a test that needs a Redis or Valkey server (`why`: what Kvrocks
 * lacks): ignored in the Kvrocks pass, its name then saying why.
 *
 * @example
 * ```ts
 * Deno.test({ ...redisOnly("appendonly no is refused", "no AOF"), fn() {} });
 * ```
 */
export function redisOnly(name: string, why: string): { name: string; ignore: boolean } {
  return KVROCKS_PASS
    ? { name: `${name} (ignored on kvrocks: ${why})`, ignore: true }
    : { name, ignore: false };
}

/**
 * The Kvrocks binary: `kvrocks` on PATH, else `../shared/bin/kvrocks` beside the repository
 * (relative to its root), else undefined.
 *
 * @example
 * ```ts
 * const bin = await kvrocksBinary(); // e.g. "/usr/local/bin/kvrocks", or undefined
 * ```
 */
export async function kvrocksBinary(): Promise<string | undefined> {
  const onPath = await findOnPath("kvrocks");
  if (onPath !== undefined) return onPath;
  const beside = new URL("../../../shared/bin/kvrocks", import.meta.url).pathname;
  try {
    const info = await Deno.stat(beside);
    if (info.isFile && (info.mode === null || (info.mode & 0o111) !== 0)) return beside;
  } catch {
    // not there
  }
  return undefined;
}

/**
 * The Redis-compatible binary the tests start where they start one directly (replicas,
 * Sentinel, Cluster, fault staging): `KVID_TEST_SERVER` (`redis-server` or `valkey-server`),
 * `redis-server` by default (and in the Kvrocks pass, whose tests of those are ignored).
 *
 * @example
 * ```ts
 * new Deno.Command(redisBinary(), { args: ["--version"] }); // "redis-server" unless told
 * ```
 */
export function redisBinary(): "redis-server" | "valkey-server" {
  return namedKind() === "valkey" ? "valkey-server" : "redis-server";
}

/**
 * True when tests needing {@linkcode redisBinary} should be skipped: it is not on PATH and
 * nobody asked for it. A binary named in `KVID_TEST_SERVER` is never skipped: missing, it fails.
 */
export function redisBinaryMissing(): boolean {
  if (namedKind() !== undefined) return false;
  try {
    return !new Deno.Command(redisBinary(), { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return true;
  }
}

async function localKind(): Promise<ServerKind> {
  return namedKind() ?? ((await findOnPath("kvrocks")) ? "kvrocks" : "redis");
}

const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;
const OUTPUT_TAIL_BYTES = 8 * 1024;

/**
 * Start (or connect to) a server for tests and benchmarks.
 *
 * @example
 * ```ts
 * await using server = await startServer({ persistence: "aof" });
 * await command(server.url, "SET", "kvid:doc", "v"); // => "OK"
 * ```
 */
export async function startServer(
  options: ServerOptions = {},
): Promise<TestServer> {
  const envName = options.urlEnv ?? "KVID_TEST_URL";
  const external = options.server === undefined ? Deno.env.get(envName) : undefined;
  if (external) return await connectExternal(external, envName);

  const kind = options.server === undefined ? await localKind() : NAMED[options.server];
  const host = "127.0.0.1";
  // A port picked here is free when picked, not when the server binds it: another process may
  // take it in between. Then start again on another one (a fixed port is tried once).
  for (let attempt = 1;; attempt++) {
    const port = options.port ?? freePort(host);
    const dataDir = await Deno.makeTempDir({ prefix: `kvid-${kind}-` });
    const server = new LocalServer(kind, host, port, dataDir, options);
    try {
      await server.launch();
      return server;
    } catch (err) {
      await server.stop({ keepData: false });
      if (options.port !== undefined || attempt === 3 || !(err instanceof PortTakenError)) {
        throw err;
      }
    }
  }
}

/** The server could not have the port it was started on: another process holds it. */
class PortTakenError extends Error {}

async function connectExternal(
  url: string,
  envName: string,
): Promise<TestServer> {
  const parsed = parseUrl(url);
  let info: string;
  try {
    info = String(await command(url, "INFO", "server"));
  } catch (err) {
    throw new Error(
      `cannot reach server from $${envName} (${redactUrl(url)}): ${errorMessage(err)}`,
      { cause: err },
    );
  }
  return {
    url,
    host: parsed.host,
    port: parsed.port,
    kind: "external",
    version: versionOf(parseInfo(info)),
    dataDir: undefined,
    stop: () => Promise.resolve(),
    kill: () =>
      Promise.reject(
        new Error(`kill() is not supported for an external server ($${envName})`),
      ),
    restart: () =>
      Promise.reject(
        new Error(
          `restart() is not supported for an external server ($${envName}); ` +
            `unset ${envName} to let the harness start its own server`,
        ),
      ),
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
}

/** Bounded ring of the latest bytes of a child's output. */
class OutputTail {
  #chunks: Uint8Array[] = [];
  #size = 0;

  push(chunk: Uint8Array) {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#size - this.#chunks[0].length >= OUTPUT_TAIL_BYTES) {
      this.#size -= this.#chunks.shift()!.length;
    }
  }

  text(): string {
    const all = concat(this.#chunks);
    const start = Math.max(0, all.length - OUTPUT_TAIL_BYTES);
    return new TextDecoder().decode(all.subarray(start)).trim();
  }
}

async function drain(stream: ReadableStream<Uint8Array>, tail: OutputTail) {
  try {
    for await (const chunk of stream) tail.push(chunk);
  } catch {
    // stream errored (process gone): nothing more to keep
  }
}

class LocalServer implements TestServer {
  readonly host: string;
  readonly port: number;
  readonly kind: ServerKind;
  readonly url: string;
  readonly dataDir: string;
  version = "";

  #options: ServerOptions;
  #child: Deno.ChildProcess | undefined;
  #status: Promise<Deno.CommandStatus> | undefined;
  #exited = false;
  #drains: Promise<void>[] = [];
  #tail = new OutputTail();
  #dirRemoved = false;

  constructor(
    kind: ServerKind,
    host: string,
    port: number,
    dataDir: string,
    options: ServerOptions,
  ) {
    this.kind = kind;
    this.host = host;
    this.port = port;
    this.dataDir = dataDir;
    this.#options = options;
    const auth = options.password === undefined ? "" : `:${encodeURIComponent(options.password)}@`;
    this.url = `redis://${auth}${host}:${port}`;
  }

  /** Spawn the process and wait until it answers PING. */
  async launch(): Promise<void> {
    if (this.#dirRemoved) {
      await Deno.mkdir(this.dataDir, { recursive: true });
      this.#dirRemoved = false;
    }
    const { bin, args } = await this.#commandLine();
    this.#tail = new OutputTail();
    this.#exited = false;
    const child = new Deno.Command(bin, {
      args,
      cwd: this.dataDir,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#child = child;
    this.#status = child.status.then((status) => {
      this.#exited = true;
      return status;
    });
    this.#drains = [
      drain(child.stdout, this.#tail),
      drain(child.stderr, this.#tail),
    ];
    try {
      await this.#waitReady();
      const info = parseInfo(
        String(await command(this.url, "INFO", "server")),
      );
      // Make sure the answer came from our child and not from some other
      // process that already owned the port (our child then fails to bind).
      const pid = info.get("process_id");
      if (pid !== undefined && Number(pid) !== child.pid) {
        await withTimeout(this.#status!, 1_000);
        throw new PortTakenError(
          `port ${this.host}:${this.port} is already served by another ` +
            `process (pid ${pid}), not by the ${this.kind} we started ` +
            `(pid ${child.pid}); output tail:\n${this.#tail.text()}`,
        );
      }
      this.version = versionOf(info);
    } catch (err) {
      await this.#terminate("SIGKILL");
      throw err;
    }
  }

  async #commandLine(): Promise<{ bin: string; args: string[] }> {
    const { persistence = "none", password } = this.#options;
    if (this.kind !== "kvrocks") {
      const args = [
        "--port",
        String(this.port),
        "--bind",
        this.host,
        "--dir",
        this.dataDir,
        "--save",
        "",
        "--daemonize",
        "no",
        "--protected-mode",
        "no",
        // AOF on (a server without it loses reservations in a crash), except for "snapshots";
        // "none" wipes the data at restart() instead.
        "--appendonly",
        persistence === "snapshots" ? "no" : "yes",
        "--appendfsync",
        persistence === "aof" ? "always" : "everysec",
      ];
      if (password !== undefined) args.push("--requirepass", password);
      for (const name of this.#options.disable ?? []) args.push("--rename-command", name, "");
      return { bin: this.kind === "valkey" ? "valkey-server" : "redis-server", args };
    }
    const bin = await kvrocksBinary();
    if (bin === undefined) {
      throw new Error(
        "kvrocks is neither on PATH nor at ../shared/bin/kvrocks beside the repository: get a release binary (https://github.com/apache/kvrocks/releases) or the Docker image apache/kvrocks",
      );
    }
    // The data (RocksDB's files) in db/ under the temp dir, the config beside it; Kvrocks
    // writes each command to its write-ahead log before replying, what `appendonly yes` is
    // to Redis ("snapshots" turns it off: what the library refuses).
    const lines = [
      `bind ${this.host}`,
      `port ${this.port}`,
      `dir ${this.dataDir}`,
      `pidfile ${this.dataDir}/kvrocks.pid`,
      "daemonize no",
      "log-dir stdout",
      "log-level warning",
      "workers 4",
      `rocksdb.write_options.sync ${persistence === "aof" ? "yes" : "no"}`,
      `rocksdb.write_options.disable_wal ${persistence === "snapshots" ? "yes" : "no"}`,
    ];
    if (password !== undefined) lines.push(`requirepass ${password}`);
    for (const name of this.#options.disable ?? []) lines.push(`rename-command ${name} ""`);
    lines.push(...this.#options.kvrocksConfig ?? []);
    const conf = `${this.dataDir}/kvrocks.conf`;
    await Deno.writeTextFile(conf, lines.join("\n") + "\n");
    return { bin, args: ["-c", conf] };
  }

  async #waitReady(): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let lastError: unknown;
    while (true) {
      if (this.#exited) {
        const status = await this.#status!;
        await Promise.all(this.#drains);
        const tail = this.#tail.text();
        // redis-server: "Address already in use"; kvrocks: "Address already in use" too.
        const Failure = /already in use/i.test(tail) ? PortTakenError : Error;
        throw new Failure(
          `${this.kind} exited during startup (code ${status.code}` +
            `${status.signal ? `, signal ${status.signal}` : ""}) on port ` +
            `${this.port}; output tail:\n${tail}`,
        );
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      try {
        const reply = await rawCommand(
          this.url,
          ["PING"],
          Math.min(remaining, 1_000),
        );
        if (reply === "PONG") return;
        lastError = new Error(`unexpected PING reply ${JSON.stringify(reply)}`);
      } catch (err) {
        lastError = err;
      }
      await sleep(Math.min(50, Math.max(0, deadline - Date.now())));
    }
    throw new Error(
      `${this.kind} on ${this.host}:${this.port} did not answer PING within ` +
        `${READY_TIMEOUT_MS} ms (last error: ${errorMessage(lastError)}); ` +
        `output tail:\n${this.#tail.text()}`,
    );
  }

  /** Signal the child, wait for it and its pipes; no-op if not running. */
  async #terminate(signal: Deno.Signal): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = undefined;
    if (!this.#exited) {
      try {
        child.kill(signal);
      } catch {
        // already exited
      }
      if (signal !== "SIGKILL") {
        const timedOut = await withTimeout(this.#status!, STOP_TIMEOUT_MS);
        if (timedOut) {
          try {
            child.kill("SIGKILL");
          } catch {
            // exited in the meantime
          }
        }
      }
    }
    await this.#status;
    await Promise.all(this.#drains);
  }

  async stop(options: StopOptions = {}): Promise<void> {
    await this.#terminate("SIGTERM");
    const keep = options.keepData ?? this.#options.keepData ?? false;
    if (!keep && !this.#dirRemoved) {
      await Deno.remove(this.dataDir, { recursive: true }).catch(() => {});
      this.#dirRemoved = true;
    }
  }

  async kill(): Promise<void> {
    await this.#terminate("SIGKILL");
  }

  async restart(): Promise<void> {
    await this.#terminate("SIGTERM");
    // Kvrocks always keeps its RocksDB files, and Redis and Valkey run with AOF here: a restart
    // "without persistence" wipes the data to stage the loss of a server that kept none.
    if ((this.#options.persistence ?? "none") === "none") {
      await Deno.remove(this.dataDir, { recursive: true }).catch(() => {});
      this.#dirRemoved = true;
    }
    await this.launch();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/**
 * True when `KVID_TEST_URL` names an existing server: tests that need servers of their own (one
 * without scripting, several to pause) are then listed as ignored, their names saying why.
 */
export const EXTERNAL_SERVER: boolean = Deno.env.get("KVID_TEST_URL") !== undefined;

/**
 * The `name` and `ignore` of a test that starts servers of its own: ignored with an external
 * server, its name then saying why.
 */
export function ownServers(name: string): { name: string; ignore: boolean } {
  return EXTERNAL_SERVER
    ? { name: `${name} (ignored: needs servers of its own, KVID_TEST_URL is set)`, ignore: true }
    : { name, ignore: false };
}

/**
 * Start a server without scripting (`EVAL` and `EVALSHA` renamed away, as some managed Redis
 * do). Throws, never returns nothing, when that cannot be had (a test that cannot run its
 * subject fails): a server that did not start, one that still runs scripts, or an external
 * server ($KVID_TEST_URL; tests that need one are ignored then, see {@linkcode EXTERNAL_SERVER}).
 */
export async function startNoScriptingServer(): Promise<TestServer> {
  if (EXTERNAL_SERVER) {
    throw new Error(
      "startNoScriptingServer: KVID_TEST_URL names an existing server, which cannot be started without scripting; ignore this test when EXTERNAL_SERVER",
    );
  }
  const server = await startServer({ disable: ["EVAL", "EVALSHA"] });
  let scripts: boolean;
  try {
    await command(server.url, "EVAL", "return 1", "0");
    scripts = true;
  } catch (err) {
    scripts = !/unknown command/i.test(String(err));
  }
  if (scripts) {
    await server.stop();
    throw new Error(
      `startNoScriptingServer: the ${server.kind} server still runs scripts with EVAL and EVALSHA renamed away`,
    );
  }
  return server;
}

/**
 * Send one raw command to the server at `url` over a fresh connection and
 * return its reply: simple strings and bulk strings as `string`, integers
 * as `number`, nil as `null`, arrays as `unknown[]` (nested error replies
 * become `Error` values). A top-level error reply is thrown as an `Error`
 * carrying the server message. Authenticates first when `url` has a
 * password (`redis://[user]:password@host:port`).
 *
 * @example
 * ```ts
 * await using server = await startServer();
 * await command(server.url, "HINCRBY", "kvid:doc", "order", "10"); // => 10
 * ```
 */
export async function command(
  url: string,
  ...args: string[]
): Promise<unknown> {
  if (args.length === 0) throw new Error("command: no command given");
  return await rawCommand(url, args);
}

interface ParsedUrl {
  host: string;
  port: number;
  username: string;
  password: string | undefined;
  db: string | undefined;
}

function parseUrl(url: string): ParsedUrl {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`invalid server url: ${redactUrl(url)}`);
  }
  if (u.protocol !== "redis:") {
    throw new Error(
      `unsupported url scheme ${u.protocol} (only redis:// is supported)`,
    );
  }
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1") || "127.0.0.1";
  const port = u.port ? Number(u.port) : 6379;
  const username = decodeURIComponent(u.username);
  const password = u.password ? decodeURIComponent(u.password) : undefined;
  const db = u.pathname.replace(/^\//, "") || undefined;
  return { host, port, username, password, db };
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, "//***@");
}

async function rawCommand(
  url: string,
  args: string[],
  timeoutMs?: number,
): Promise<unknown> {
  const target = parseUrl(url);
  const conn = await Deno.connect({ hostname: target.host, port: target.port });
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      conn.close();
    } catch {
      // already closed
    }
  };
  let timedOut = false;
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
    timedOut = true;
    close();
  }, timeoutMs);
  try {
    const reader = new ReplyReader(conn);
    if (target.password !== undefined) {
      const auth = target.username
        ? ["AUTH", target.username, target.password]
        : ["AUTH", target.password];
      await writeAll(conn, encodeCommand(auth));
      await reader.reply();
    }
    if (target.db !== undefined && target.db !== "0") {
      await writeAll(conn, encodeCommand(["SELECT", target.db]));
      await reader.reply();
    }
    await writeAll(conn, encodeCommand(args));
    return await reader.reply();
  } catch (err) {
    if (timedOut) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${args[0]} reply`,
        { cause: err },
      );
    }
    throw err;
  } finally {
    clearTimeout(timer);
    close();
  }
}

const encoder = new TextEncoder();

function encodeCommand(args: string[]): Uint8Array {
  const parts: Uint8Array[] = [encoder.encode(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = encoder.encode(arg);
    parts.push(encoder.encode(`$${bytes.length}\r\n`), bytes, CRLF);
  }
  return concat(parts);
}

const CRLF = new Uint8Array([13, 10]);

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    offset += await conn.write(data.subarray(offset));
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Thrown by the parser when the buffer does not hold a full reply yet. */
const INCOMPLETE = Symbol("incomplete");

/** Incremental RESP2 reply reader over one connection. */
class ReplyReader {
  #conn: Deno.Conn;
  #buf: Uint8Array = new Uint8Array(0);
  #pos = 0;
  #decoder = new TextDecoder();

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** Read one reply; a top-level error reply is thrown. */
  async reply(): Promise<unknown> {
    while (true) {
      const start = this.#pos;
      try {
        const value = this.#parse();
        this.#buf = this.#buf.subarray(this.#pos);
        this.#pos = 0;
        if (value instanceof Error) throw value;
        return value;
      } catch (err) {
        if (err !== INCOMPLETE) throw err;
        this.#pos = start;
      }
      const chunk = new Uint8Array(16 * 1024);
      const n = await this.#conn.read(chunk);
      if (n === null) {
        throw new Error("connection closed by server before a full reply");
      }
      this.#buf = concat([this.#buf, chunk.subarray(0, n)]);
    }
  }

  #line(): string {
    for (let i = this.#pos; i + 1 < this.#buf.length; i++) {
      if (this.#buf[i] === 13 && this.#buf[i + 1] === 10) {
        const line = this.#decoder.decode(this.#buf.subarray(this.#pos, i));
        this.#pos = i + 2;
        return line;
      }
    }
    throw INCOMPLETE;
  }

  #parse(): unknown {
    if (this.#pos >= this.#buf.length) throw INCOMPLETE;
    const type = String.fromCharCode(this.#buf[this.#pos++]);
    const line = this.#line();
    switch (type) {
      case "+":
        return line;
      case "-":
        return new Error(line);
      case ":":
        return Number(line);
      case "$": {
        const len = Number(line);
        if (len < 0) return null;
        if (this.#pos + len + 2 > this.#buf.length) throw INCOMPLETE;
        const value = this.#decoder.decode(
          this.#buf.subarray(this.#pos, this.#pos + len),
        );
        this.#pos += len + 2;
        return value;
      }
      case "*": {
        const count = Number(line);
        if (count < 0) return null;
        const items: unknown[] = [];
        for (let i = 0; i < count; i++) items.push(this.#parse());
        return items;
      }
      default:
        throw new Error(
          `unsupported RESP reply type ${JSON.stringify(type)}: ${line}`,
        );
    }
  }
}

/** Parse an `INFO` reply into its `field:value` pairs. */
function parseInfo(info: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const raw of info.split(/\r?\n/)) {
    const idx = raw.indexOf(":");
    if (idx > 0 && !raw.startsWith("#")) {
      fields.set(raw.slice(0, idx), raw.slice(idx + 1).trim());
    }
  }
  return fields;
}

/** The server version from parsed `INFO server` fields. */
function versionOf(fields: Map<string, string>): string {
  // kvrocks also reports a compatibility `redis_version`, so check it first.
  return fields.get("kvrocks_version") ?? fields.get("version") ??
    fields.get("valkey_version") ?? fields.get("redis_version") ?? "";
}

function freePort(hostname: string): number {
  const listener = Deno.listen({ hostname, port: 0 });
  try {
    return (listener.addr as Deno.NetAddr).port;
  } finally {
    listener.close();
  }
}

async function findOnPath(bin: string): Promise<string | undefined> {
  const path = Deno.env.get("PATH") ?? "";
  for (const dir of path.split(":")) {
    if (!dir) continue;
    const candidate = `${dir}/${bin}`;
    try {
      const info = await Deno.stat(candidate);
      if (info.isFile && (info.mode === null || (info.mode & 0o111) !== 0)) {
        return candidate;
      }
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Wait for `promise` at most `ms`; resolves `true` if the time ran out. */
async function withTimeout(
  promise: Promise<unknown>,
  ms: number,
): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

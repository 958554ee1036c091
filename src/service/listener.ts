/**
 * The service's own HTTP/1.1 listener on `Deno.listen`: an accept loop that survives running
 * out of file descriptors, a cap on open connections, and time limits on the request head, an
 * idle keep-alive connection, a body and a response write, so floods, slowloris and clients
 * that stop reading are closed after known limits instead of holding the process.
 *
 * Why not `Deno.serve`: in Deno 2.9 it has no header or idle timeout (1,000 half-sent requests
 * stayed open 45 s; denoland/deno#3515 asks for them) and, when `accept` fails with `EMFILE`,
 * its serve loop rejects and the process exits ("Uncaught (in promise) Http: Error: Too many
 * open files (os error 24)"): 231 idle connections at `ulimit -n 256` end it. The reproduction:
 *
 * ```sh
 * echo 'Deno.serve({ port: 18101 }, () => new Response("ok"))' > s.ts
 * prlimit --nofile=256:256 deno run -A s.ts &
 * # open 300 TCP connections to 18101 and send nothing: the server exits with code 1
 * ```
 * Deno's `node:http` keeps running there but stops
 * answering for good, and honours neither `headersTimeout` nor `requestTimeout` (150 half-sent
 * requests stayed open past both). Measured 2026-12-01, Deno 2.9.6.
 *
 * What it does not do: HTTP/2, TLS (terminate it in front), upgrades. It reads bodies of at
 * most `maxBodyBytes` and buffers each response (the service's answers are at most a few
 * hundred KiB).
 *
 * @module
 */

/** Options of {@linkcode listen}. */
export interface ListenerOptions {
  /** The address to listen on. */
  hostname: string;
  /** The port; 0 for a free one. */
  port: number;
  /** Answers one request. */
  handler: (req: Request) => Response | Promise<Response>;
  /**
   * Open connections at most; past it the oldest connection waiting for a request is closed to
   * make room (or, when every one is answering, the new one is).
   * @default {the soft file-descriptor limit minus 64, at least half of it, at most 10,000}
   */
  maxConnections?: number;
  /**
   * A request's head (request line and headers) must arrive within this many ms of its first
   * byte (of the connection's opening, for its first request).
   * @default {10000}
   */
  headersTimeoutMs?: number;
  /**
   * A kept-alive connection with no request under way is closed after this many ms.
   * @default {30000}
   */
  idleTimeoutMs?: number;
  /**
   * A request body must be read, and a response written, within this many ms (each in all,
   * from its first byte: a trickle does not buy more time).
   * @default {10000}
   */
  ioTimeoutMs?: number;
  /**
   * The request head's size at most (431 past it; 414 when the request line alone is past it).
   * @default {32768}
   */
  maxHeaderBytes?: number;
  /**
   * A request body's size at most (413 past it).
   * @default {65536}
   */
  maxBodyBytes?: number;
  /** Called once listening. */
  onListen?: (addr: Deno.NetAddr) => void;
  /** Where to log (accept errors, at most once every 10 s). @default {console.error} */
  log?: (line: string) => void;
}

/** What the listener counted since it started. */
export interface ConnectionStats {
  /** Connections open now. */
  open: number;
  /** Connections accepted. */
  accepted: number;
  /** Connections closed by a limit, by reason. */
  closed: {
    headersTimeout: number;
    idleTimeout: number;
    ioTimeout: number;
    /** Closed to make room under `maxConnections`. */
    shed: number;
  };
  /** Failed `accept` calls (`EMFILE`: out of file descriptors). */
  acceptErrors: number;
}

/** A running listener. */
export interface Listener {
  /** Where it listens. */
  readonly addr: Deno.NetAddr;
  /** The limits in force. */
  readonly limits: ListenerLimits;
  /** Counters so far. */
  stats(): ConnectionStats;
  /** The counters as Prometheus lines. */
  metrics(): string[];
  /**
   * Stop accepting, close connections waiting for a request, let those answering finish (their
   * connection then closes); resolves when none is left.
   */
  shutdown(): Promise<void>;
}

/** The limits a {@linkcode Listener} enforces, defaults filled in. */
export interface ListenerLimits {
  /** Open connections at most. */
  readonly maxConnections: number;
  /** ms for a request head. */
  readonly headersTimeoutMs: number;
  /** ms a kept-alive connection may wait for its next request. */
  readonly idleTimeoutMs: number;
  /** ms for a request body to be read, and for a response to be written, each in all. */
  readonly ioTimeoutMs: number;
  /** Bytes of a request head at most. */
  readonly maxHeaderBytes: number;
  /** Bytes of a request body at most. */
  readonly maxBodyBytes: number;
}

const LATIN1 = new TextDecoder("latin1");
const SWEEP_MS = 250;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REASONS: Record<number, string> = {
  100: "Continue",
  200: "OK",
  303: "See Other",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  413: "Content Too Large",
  414: "URI Too Long",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
};

/** The soft limit of open files, from /proc (Linux), or undefined. */
export function fdLimit(): number | undefined {
  try {
    if (Deno.permissions.querySync({ name: "read", path: "/proc/self" }).state !== "granted") {
      return undefined;
    }
    const line = Deno.readTextFileSync("/proc/self/limits").split("\n")
      .find((l) => l.startsWith("Max open files"));
    const n = Number(line?.split(/\s{2,}/)[1]);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

type Phase = "idle" | "head" | "busy";

class Connection {
  readonly conn: Deno.TcpConn;
  phase: Phase = "head";
  #buf = new Uint8Array(4096);
  #start = 0;
  #end = 0;
  /** When (performance.now() ms) the armed limit closes the connection; Infinity: none. */
  deadline = Infinity;
  #reason: keyof ConnectionStats["closed"] = "ioTimeout";
  closedBy: keyof ConnectionStats["closed"] | undefined;
  #closed = false;

  readonly #onClose: (c: Connection) => void;

  constructor(conn: Deno.TcpConn, onClose: (c: Connection) => void) {
    this.conn = conn;
    this.#onClose = onClose;
  }

  get buffered(): number {
    return this.#end - this.#start;
  }

  /**
   * Close the connection when `ms` pass before the next `arm`/`disarm`. A deadline, not a
   * timer: one sweep of all connections closes the late ones (a timer per request cost 3 timers,
   * ~50 µs, per request on a loaded machine; the deadline costs a clock read).
   */
  arm(ms: number, reason: keyof ConnectionStats["closed"]): void {
    this.deadline = performance.now() + ms;
    this.#reason = reason;
  }

  disarm(): void {
    this.deadline = Infinity;
  }

  /** Close it if its deadline passed. */
  expire(now: number): void {
    if (now >= this.deadline) this.close(this.#reason);
  }

  close(reason?: keyof ConnectionStats["closed"]): void {
    this.disarm();
    if (this.#closed) return;
    this.#closed = true;
    this.closedBy ??= reason;
    try {
      this.conn.close();
    } catch {
      // already closed
    }
    this.#onClose(this);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Read more bytes into the buffer; false at the end of the stream (or once closed). */
  async fill(): Promise<boolean> {
    if (this.#closed) return false;
    if (this.#start > 0 && this.#start === this.#end) this.#start = this.#end = 0;
    if (this.#end === this.#buf.length) {
      const size = this.buffered;
      const next = size * 2 > this.#buf.length ? new Uint8Array(this.#buf.length * 2) : this.#buf;
      next.copyWithin(0, this.#start, this.#end);
      if (next !== this.#buf) next.set(this.#buf.subarray(this.#start, this.#end));
      this.#buf = next;
      this.#start = 0;
      this.#end = size;
    }
    let n: number | null;
    try {
      n = await this.conn.read(this.#buf.subarray(this.#end));
    } catch {
      return false;
    }
    if (n === null) return false;
    this.#end += n;
    return true;
  }

  /** The index (relative to the buffered bytes) of the end of the head, or -1. */
  headEnd(): number {
    const b = this.#buf;
    for (let i = this.#start; i + 3 < this.#end; i++) {
      if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) {
        return i - this.#start;
      }
    }
    return -1;
  }

  /** Drop leading empty lines (allowed before a request line). */
  skipBlankLines(): void {
    while (
      this.#start < this.#end && (this.#buf[this.#start] === 13 || this.#buf[this.#start] === 10)
    ) this.#start++;
  }

  /** Take `n` buffered bytes. */
  take(n: number): Uint8Array {
    const out = this.#buf.slice(this.#start, this.#start + n);
    this.#start += n;
    return out;
  }

  /** The first `n` buffered bytes, not taken. */
  peek(n: number): Uint8Array {
    return this.#buf.subarray(this.#start, this.#start + Math.min(n, this.buffered));
  }

  /** Write all of `bytes` within `ms` in all (a client reading slowly is cut off then). */
  async write(bytes: Uint8Array, ms: number): Promise<void> {
    let at = 0;
    this.arm(ms, "ioTimeout");
    while (at < bytes.length) at += await this.conn.write(bytes.subarray(at));
    this.disarm();
  }

  /**
   * Arm the deadline of a body being read: `ms` from its first read, in all, however slowly
   * it trickles in (a body's bytes do not each buy more time).
   */
  armBody(ms: number): void {
    this.bodyDeadline ??= performance.now() + ms;
    this.deadline = this.bodyDeadline;
    this.#reason = "ioTimeout";
  }

  /** The deadline of the body being read, or undefined. */
  bodyDeadline: number | undefined;
}

interface Head {
  method: string;
  target: string;
  http10: boolean;
  headers: Headers;
}

function parseHead(bytes: Uint8Array): Head {
  // Latin-1: the bytes as they are; header values that are not ASCII stay what was sent.
  const text = LATIN1.decode(bytes);
  const lines = text.split("\r\n");
  const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP\/1\.([01])$/.exec(lines[0]);
  if (m === null) throw new HttpError(400, "a malformed request line");
  const headers = new Headers();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    const name = colon > 0 ? line.slice(0, colon) : "";
    if (!TOKEN.test(name)) throw new HttpError(400, "a malformed header line");
    try {
      headers.append(name, line.slice(colon + 1).trim());
    } catch {
      throw new HttpError(400, "a malformed header value");
    }
  }
  return { method: m[1], target: m[2], http10: m[3] === "0", headers };
}

/**
 * Listen on `hostname:port` and answer with `handler`, within the limits of
 * {@linkcode ListenerOptions}.
 *
 * @example Serve, ask, stop
 * ```ts
 * import { listen } from "@kvid/core/serve";
 * import assert from "node:assert/strict";
 *
 * const server = listen({
 *   hostname: "127.0.0.1",
 *   port: 0,
 *   handler: () => new Response("ok\n"),
 *   onListen() {},
 * });
 * const res = await fetch(`http://127.0.0.1:${server.addr.port}/`);
 * assert.ok((await res.text()) === "ok\n");
 * await server.shutdown();
 * ```
 *
 * @param options See {@linkcode ListenerOptions}.
 * @returns The running listener.
 */
export function listen(options: ListenerOptions): Listener {
  const limit = fdLimit();
  const limits = {
    maxConnections: options.maxConnections ??
      (limit === undefined ? 1_000 : Math.min(10_000, Math.max(limit - 64, limit >> 1))),
    headersTimeoutMs: options.headersTimeoutMs ?? 10_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 30_000,
    ioTimeoutMs: options.ioTimeoutMs ?? 10_000,
    maxHeaderBytes: options.maxHeaderBytes ?? 32_768,
    maxBodyBytes: options.maxBodyBytes ?? 65_536,
  };
  for (const [name, v] of Object.entries(limits)) {
    if (!Number.isInteger(v) || v < 1) {
      throw new RangeError(`listen(): ${name} must be a positive integer, got ${v}`);
    }
  }
  const log = options.log ?? ((line: string) => console.error(line));
  const listener = Deno.listen({ hostname: options.hostname, port: options.port });
  const addr = listener.addr as Deno.NetAddr;
  // Insertion order is age: the first waiting one is the oldest.
  const conns = new Set<Connection>();
  const stats: ConnectionStats = {
    open: 0,
    accepted: 0,
    closed: { headersTimeout: 0, idleTimeout: 0, ioTimeout: 0, shed: 0 },
    acceptErrors: 0,
  };
  let stopping = false;
  let lastLogged = 0;
  let allClosed: (() => void) | undefined;

  // Called once per connection, as it closes (by a limit, by shedding, or at the end).
  const closed = (c: Connection) => {
    conns.delete(c);
    stats.open = conns.size;
    if (c.closedBy !== undefined) stats.closed[c.closedBy]++;
    if (conns.size === 0) allClosed?.();
  };

  const shedOldest = (): boolean => {
    for (const c of conns) {
      if (c.phase !== "busy") {
        c.close("shed");
        return true;
      }
    }
    return false;
  };

  const respond = async (c: Connection, res: Response, head: Head | undefined, keep: boolean) => {
    const whole = res.body === null ? new Uint8Array(0) : new Uint8Array(await res.arrayBuffer());
    const body = head?.method === "HEAD" ? new Uint8Array(0) : whole;
    let text = `HTTP/1.1 ${res.status} ${REASONS[res.status] ?? "Status"}\r\n`;
    for (const [name, value] of res.headers) {
      if (name !== "content-length" && name !== "connection" && name !== "transfer-encoding") {
        text += `${name}: ${value}\r\n`;
      }
    }
    text += `content-length: ${whole.length}\r\ndate: ${new Date().toUTCString()}\r\n`;
    text += keep ? "\r\n" : "connection: close\r\n\r\n";
    const headBytes = new TextEncoder().encode(text);
    const out = new Uint8Array(headBytes.length + body.length);
    out.set(headBytes);
    out.set(body, headBytes.length);
    await c.write(out, limits.ioTimeoutMs);
  };

  const plainError = (status: number, message: string) =>
    new Response(JSON.stringify({ error: { code: "bad_request", message } }) + "\n", {
      status,
      headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
    });

  /** The request body as a stream over the connection, or null; `done` once fully read. */
  const bodyOf = (c: Connection, head: Head, state: { done: boolean }) => {
    const te = head.headers.get("transfer-encoding");
    const cl = head.headers.get("content-length");
    if (te !== null) {
      if (te.trim().toLowerCase() !== "chunked" || cl !== null) {
        throw new HttpError(400, "only Transfer-Encoding: chunked, without Content-Length");
      }
      return chunkedBody(c, state);
    }
    if (cl === null) {
      state.done = true;
      return null;
    }
    if (!/^[0-9]{1,15}$/.test(cl.trim())) throw new HttpError(400, "a malformed Content-Length");
    let left = Number(cl.trim());
    if (left > limits.maxBodyBytes) {
      throw new HttpError(413, `the body is over ${limits.maxBodyBytes} bytes`);
    }
    if (left === 0) {
      state.done = true;
      return null;
    }
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        c.armBody(limits.ioTimeoutMs);
        if (c.buffered === 0 && !(await c.fill())) {
          c.disarm();
          controller.error(new Error("the connection closed before the body ended"));
          return;
        }
        c.disarm();
        const chunk = c.take(Math.min(left, c.buffered));
        left -= chunk.length;
        controller.enqueue(chunk);
        if (left === 0) {
          state.done = true;
          controller.close();
        }
      },
    });
  };

  const chunkedBody = (c: Connection, state: { done: boolean }) => {
    let size = 0;
    const line = async (): Promise<string> => {
      for (;;) {
        const view = c.peek(c.buffered);
        const at = view.indexOf(10);
        if (at >= 0) {
          const text = LATIN1.decode(c.take(at + 1));
          return text.replace(/\r?\n$/, "");
        }
        if (c.buffered > 1024) throw new Error("a chunk line over 1 KiB");
        if (!(await c.fill())) throw new Error("the connection closed inside the body");
      }
    };
    let chunkLeft = 0;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        c.armBody(limits.ioTimeoutMs);
        try {
          if (chunkLeft === 0) {
            const n = parseInt((await line()).split(";")[0].trim(), 16);
            if (!Number.isInteger(n) || n < 0) throw new Error("a malformed chunk size");
            if (n === 0) {
              while ((await line()) !== ""); // trailers
              state.done = true;
              c.disarm();
              controller.close();
              return;
            }
            size += n;
            if (size > limits.maxBodyBytes) throw new Error("the body is too large");
            chunkLeft = n;
          }
          if (c.buffered === 0 && !(await c.fill())) throw new Error("closed inside the body");
          const chunk = c.take(Math.min(chunkLeft, c.buffered));
          chunkLeft -= chunk.length;
          if (chunkLeft === 0) {
            if (c.buffered < 2) await c.fill();
            if (c.buffered < 2) throw new Error("closed inside the body");
            c.take(2);
          }
          c.disarm();
          controller.enqueue(chunk);
        } catch (err) {
          c.disarm();
          controller.error(err);
        }
      },
    });
  };

  // Closing with unread input makes the kernel reset the connection, which can destroy the
  // answer on its way: say we are done writing, then read and drop what the client still sends
  // (at most a body's worth, for at most a second) before closing.
  const linger = async (c: Connection) => {
    await c.conn.closeWrite();
    c.arm(1_000, "ioTimeout");
    let dropped = 0;
    while (dropped < limits.maxBodyBytes + limits.maxHeaderBytes) {
      dropped += c.buffered;
      c.take(c.buffered);
      if (!(await c.fill())) break;
    }
    c.disarm();
  };

  const serve = async (c: Connection) => {
    let first = true;
    try {
      for (;;) {
        // Waiting for a request: the first must be complete within headersTimeout of the
        // connection's opening; a later one may be idleTimeout in coming, then headersTimeout.
        c.phase = first ? "head" : "idle";
        c.arm(
          first ? limits.headersTimeoutMs : limits.idleTimeoutMs,
          first ? "headersTimeout" : "idleTimeout",
        );
        c.skipBlankLines();
        let end = c.headEnd();
        while (end < 0) {
          if (c.buffered > limits.maxHeaderBytes) {
            const line = c.peek(limits.maxHeaderBytes + 1).indexOf(10);
            throw new HttpError(
              line < 0 ? 414 : 431,
              line < 0 ? "the request line is too long" : "the request head is too large",
            );
          }
          if (stopping && c.buffered === 0) return;
          if (!(await c.fill())) return;
          c.skipBlankLines();
          if (c.phase === "idle" && c.buffered > 0) {
            c.phase = "head";
            c.arm(limits.headersTimeoutMs, "headersTimeout");
          }
          end = c.headEnd();
        }
        if (end > limits.maxHeaderBytes) {
          const line = c.peek(end).indexOf(10);
          throw new HttpError(
            line < 0 || line > limits.maxHeaderBytes ? 414 : 431,
            line < 0 || line > limits.maxHeaderBytes
              ? "the request line is too long"
              : "the request head is too large",
          );
        }
        c.phase = "busy";
        c.disarm();
        first = false;
        const head = parseHead(c.take(end));
        c.take(4);
        const state = { done: false };
        c.bodyDeadline = undefined;
        const body = bodyOf(c, head, state);
        const host = head.headers.get("host") ?? `${options.hostname}:${addr.port}`;
        if (!head.target.startsWith("/")) throw new HttpError(400, "the target is not a path");
        let req: Request;
        try {
          req = new Request(`http://${host}${head.target}`, {
            method: head.method,
            headers: head.headers,
            body: head.method === "GET" || head.method === "HEAD" ? null : body,
          });
        } catch {
          throw new HttpError(400, "a malformed request");
        }
        if (body !== null && head.headers.get("expect")?.toLowerCase() === "100-continue") {
          await c.write(
            new TextEncoder().encode("HTTP/1.1 100 Continue\r\n\r\n"),
            limits.ioTimeoutMs,
          );
        }
        let res: Response;
        try {
          res = await options.handler(req);
        } catch {
          res = new Response("internal error\n", { status: 500 });
        }
        const connection = head.headers.get("connection")?.toLowerCase() ?? "";
        const keep = !stopping && state.done && !connection.includes("close") &&
          (!head.http10 || connection.includes("keep-alive"));
        await respond(c, res, head, keep);
        if (!keep) return;
      }
    } catch (err) {
      if (err instanceof HttpError && !c.closed) {
        try {
          await respond(c, plainError(err.status, err.message), undefined, false);
          await linger(c);
        } catch {
          // the client is gone
        }
      }
    } finally {
      c.close();
    }
  };

  const accepting = (async () => {
    for (;;) {
      let conn: Deno.TcpConn;
      try {
        conn = await listener.accept();
      } catch (err) {
        if (stopping || err instanceof Deno.errors.BadResource) return;
        // Out of file descriptors (EMFILE) or another transient failure: make room, pause
        // briefly (the pending connection stays in the backlog), go on.
        stats.acceptErrors++;
        if (Date.now() - lastLogged > 10_000) {
          lastLogged = Date.now();
          log(
            `kvid service: accept failed (${err instanceof Error ? err.message : err}); ` +
              `${conns.size} connections open, shedding idle ones`,
          );
        }
        shedOldest();
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      stats.accepted++;
      if (conns.size >= limits.maxConnections && !shedOldest()) {
        conn.close();
        continue;
      }
      const c = new Connection(conn, closed);
      conns.add(c);
      stats.open = conns.size;
      void serve(c);
    }
  })();

  // The sweep that enforces every connection's deadline, 4 times a second: a limit closes a
  // connection at most 250 ms late.
  const sweeper = setInterval(() => {
    const now = performance.now();
    for (const c of conns) c.expire(now);
  }, SWEEP_MS);

  options.onListen?.(addr);
  let stopped: Promise<void> | undefined;
  return {
    addr,
    limits,
    stats: () => ({ ...stats, closed: { ...stats.closed }, open: conns.size }),
    metrics: () => {
      const out = [
        "# HELP kvid_http_connections Open HTTP connections.",
        "# TYPE kvid_http_connections gauge",
        `kvid_http_connections ${conns.size}`,
        "# HELP kvid_http_connections_max The cap on open HTTP connections.",
        "# TYPE kvid_http_connections_max gauge",
        `kvid_http_connections_max ${limits.maxConnections}`,
        "# HELP kvid_http_connections_accepted_total HTTP connections accepted.",
        "# TYPE kvid_http_connections_accepted_total counter",
        `kvid_http_connections_accepted_total ${stats.accepted}`,
        "# HELP kvid_http_connections_closed_total HTTP connections closed by a limit.",
        "# TYPE kvid_http_connections_closed_total counter",
      ];
      const reasons = {
        headersTimeout: "headers_timeout",
        idleTimeout: "idle_timeout",
        ioTimeout: "io_timeout",
        shed: "over_cap",
      } as const;
      for (const [k, reason] of Object.entries(reasons)) {
        out.push(
          `kvid_http_connections_closed_total{reason="${reason}"} ${
            stats.closed[k as keyof typeof reasons]
          }`,
        );
      }
      out.push(
        "# HELP kvid_http_accept_errors_total Failed accepts (EMFILE: out of file descriptors).",
        "# TYPE kvid_http_accept_errors_total counter",
        `kvid_http_accept_errors_total ${stats.acceptErrors}`,
      );
      return out;
    },
    shutdown() {
      stopped ??= (async () => {
        stopping = true;
        try {
          listener.close();
        } catch {
          // closed already
        }
        await accepting;
        for (const c of conns) if (c.phase !== "busy") c.close();
        if (conns.size > 0) await new Promise<void>((resolve) => allClosed = resolve);
        clearInterval(sweeper);
      })();
      return stopped;
    },
  };
}

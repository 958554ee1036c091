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
 * requests stayed open past both), as seen on Deno 2.9.6.
 *
 * What it does not do: HTTP/2, TLS (terminate it in front), upgrades. It reads bodies of at
 * most `maxBodyBytes` and buffers each response (the service's answers are at most a few
 * hundred KiB). The options and limits are in `listener_options.ts`, a connection in
 * `connection.ts`, HTTP/1.1 on the wire in `http1.ts`; this file is the accept loop, the serve
 * loop of a connection, the sweep and shutdown.
 *
 * @module
 */

import { Connection } from "./connection.ts";
import { targetUrl } from "./host.ts";
import { bodyOf, HttpError, linger, parseHead, plainError, respond } from "./http1.ts";
import {
  type ConnectionStats,
  type Listener,
  type ListenerLimits,
  listenerLimits,
  type ListenerOptions,
} from "./listener_options.ts";

export type { ConnectionStats, Listener, ListenerLimits, ListenerOptions };

/** How often the sweep closes connections past their deadline (ms). */
const SWEEP_MS = 250;

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
  const limits = listenerLimits(options);
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
        const body = bodyOf(c, head, state, limits);
        // The route comes from the target alone: a Host that is not host[:port] is refused,
        // never pasted in front of the path (where "x/v1/ids/order?" chose the route).
        const target = targetUrl(
          head.target,
          head.headers.get("host"),
          head.http10,
          `${addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname}:${addr.port}`,
          addr.port,
        );
        if ("bad" in target) throw new HttpError(400, target.bad);
        let req: Request;
        try {
          req = new Request(target.url, {
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
          res = await options.handler(req, { remoteAddr: c.conn.remoteAddr as Deno.NetAddr });
        } catch {
          res = new Response("internal error\n", { status: 500 });
        }
        const connection = head.headers.get("connection")?.toLowerCase() ?? "";
        const keep = !stopping && state.done && !connection.includes("close") &&
          (!head.http10 || connection.includes("keep-alive"));
        await respond(c, res, head, keep, limits.ioTimeoutMs);
        if (!keep) return;
      }
    } catch (err) {
      if (err instanceof HttpError && !c.closed) {
        try {
          await respond(
            c,
            plainError(err.status, err.message),
            undefined,
            false,
            limits.ioTimeoutMs,
          );
          await linger(c, limits);
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

/**
 * The options of the service's own listener ({@linkcode ListenerOptions}), the limits it enforces
 * with their defaults written once ({@linkcode LISTENER_DEFAULTS}, {@linkcode listenerLimits}),
 * and what it reports ({@linkcode ConnectionStats}, {@linkcode Listener}).
 *
 * @module
 */

/** Options of {@linkcode listen}. */
export interface ListenerOptions {
  /** The address to listen on. */
  hostname: string;
  /** The port; 0 for a free one. */
  port: number;
  /** Answers one request; `info.remoteAddr` is the peer (as `Deno.serve` gives it). */
  handler: (
    req: Request,
    info: { remoteAddr: Deno.NetAddr },
  ) => Response | Promise<Response>;
  /**
   * Open connections at most; past it the oldest connection waiting for a request is closed to
   * make room (or, when every one is answering, the new one is).
   * @default {min(10000, max(fdLimit() - 64, fdLimit() / 2)), 1000 where fdLimit() is unknown}
   */
  maxConnections?: number;
  /**
   * A request's head (request line and headers) must arrive within this many ms of its first
   * byte (of the connection's opening, for its first request).
   * @default {10_000}
   */
  headersTimeoutMs?: number;
  /**
   * A kept-alive connection with no request under way is closed after this many ms.
   * @default {30_000}
   */
  idleTimeoutMs?: number;
  /**
   * A request body must be read, and a response written, within this many ms (each in all,
   * from its first byte: a trickle does not buy more time).
   * @default {10_000}
   */
  ioTimeoutMs?: number;
  /**
   * The request head's size at most (431 past it; 414 when the request line alone is past it).
   * @default {32_768}
   */
  maxHeaderBytes?: number;
  /**
   * A request body's size at most (413 past it).
   * @default {65_536}
   */
  maxBodyBytes?: number;
  /**
   * Called once listening.
   * @default {undefined}
   */
  onListen?: (addr: Deno.NetAddr) => void;
  /**
   * Where to log (accept errors, at most once every 10 s).
   * @default {console.error}
   */
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

/**
 * The defaults of {@linkcode ListenerOptions}' limits, written once: {@linkcode listenerLimits}
 * reads them and each option's `@default` names the same value. `maxConnections` depends on the
 * process's file-descriptor limit ({@linkcode fdLimit}): this is its value where that is unknown.
 *
 * @example
 * ```ts
 * import { LISTENER_DEFAULTS } from "./listener_options.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(LISTENER_DEFAULTS.headersTimeoutMs === 10000);
 * ```
 */
export const LISTENER_DEFAULTS = {
  maxConnections: 1000,
  headersTimeoutMs: 10000,
  idleTimeoutMs: 30000,
  ioTimeoutMs: 10000,
  maxHeaderBytes: 32768,
  maxBodyBytes: 65536,
} as const satisfies ListenerLimits;

/**
 * The limits of `options`, defaults filled in.
 *
 * @throws {RangeError} A limit that is not a positive integer.
 */
export function listenerLimits(options: Partial<ListenerLimits>): ListenerLimits {
  const fds = fdLimit();
  const limits = {
    maxConnections: options.maxConnections ??
      (fds === undefined
        ? LISTENER_DEFAULTS.maxConnections
        : Math.min(10_000, Math.max(fds - 64, fds >> 1))),
    headersTimeoutMs: options.headersTimeoutMs ?? LISTENER_DEFAULTS.headersTimeoutMs,
    idleTimeoutMs: options.idleTimeoutMs ?? LISTENER_DEFAULTS.idleTimeoutMs,
    ioTimeoutMs: options.ioTimeoutMs ?? LISTENER_DEFAULTS.ioTimeoutMs,
    maxHeaderBytes: options.maxHeaderBytes ?? LISTENER_DEFAULTS.maxHeaderBytes,
    maxBodyBytes: options.maxBodyBytes ?? LISTENER_DEFAULTS.maxBodyBytes,
  };
  for (const [name, v] of Object.entries(limits)) {
    if (!Number.isInteger(v) || v < 1) {
      throw new RangeError(`listen(): ${name} must be a positive integer, got ${v}`);
    }
  }
  return limits;
}

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

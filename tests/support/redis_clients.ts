/** Real npm Redis clients for the tests, seen through the adapters. */

import { createClient } from "redis";
import { Redis } from "ioredis";
import { fromIoredis, fromNodeRedis, type RedisClient } from "../../mod.ts";

/** The client libraries every behaviour is tested with. */
export const CLIENTS = ["node-redis", "ioredis"] as const;
/** One of {@linkcode CLIENTS}. */
export type ClientKind = typeof CLIENTS[number];

/** A connected client and how to close it. */
export interface OpenClient extends AsyncDisposable {
  /** The client through the adapter. */
  redis: RedisClient;
  /** Close the connection, dropping pending commands. */
  close(): Promise<void>;
}

/** Connect a real client of `kind` to `url`. */
export async function openClient(
  kind: ClientKind,
  url: string,
  options: {
    readyCheck?: boolean;
    /**
     * Commands fail at once while the server is unreachable (no offline queue, no per-request
     * retries), so the generator's own retries and backoff are what is seen.
     */
    failFast?: boolean;
    /** ioredis: integer replies as strings (exact above 2^53) instead of rounded numbers. */
    stringNumbers?: boolean;
  } = {},
): Promise<OpenClient> {
  const failFast = options.failFast ?? false;
  // Reconnect quickly and forever (tests stop a server and start it again).
  const reconnect = (n: number) => failFast ? Math.min(20 * n, 200) : Math.min(50 * n, 500);
  if (kind === "node-redis") {
    // node-redis sleeps between reconnects on a timer `destroy()` does not clear (up to 200 ms,
    // 500 ms without failFast): closed while a server is down, the sleep outlived the test and
    // failed the next one's timer sanitizer (2 runs in 5 of tests/faults/down_test.ts). So once
    // closing, the strategy refuses to reconnect (a connect attempt in flight at destroy() ends
    // there), and close() waits for the sleep already started: it ends in "reconnecting".
    let closing = false;
    let sleeping = false;
    let woken: (() => void) | undefined;
    const client = createClient({
      url,
      disableOfflineQueue: failFast,
      socket: {
        reconnectStrategy: (n: number) => {
          if (closing) return false;
          sleeping = true;
          return reconnect(n);
        },
        connectTimeout: 2000,
      },
    });
    client.on("error", () => {}); // reconnect errors are expected in fault tests
    client.on("reconnecting", () => {
      sleeping = false;
      woken?.();
    });
    await client.connect();
    const close = async () => {
      closing = true;
      if (client.isOpen) client.destroy();
      if (!sleeping) return;
      // Bounded: the longest sleep the strategy hands out, and some.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        woken = resolve;
        timer = setTimeout(resolve, 1_000);
      });
      clearTimeout(timer);
    };
    return { redis: fromNodeRedis(client), close, [Symbol.asyncDispose]: close };
  }
  const client = new Redis(url, {
    lazyConnect: true,
    retryStrategy: reconnect,
    enableOfflineQueue: !failFast,
    maxRetriesPerRequest: failFast ? 0 : null,
    // ioredis' ready check (INFO) fails on a server that wants a password we lack.
    enableReadyCheck: options.readyCheck ?? true,
    stringNumbers: options.stringNumbers ?? false,
    // disconnect() ends the socket and destroys it after this long if it stays open; a socket
    // already closed (while reconnecting) never says so, so close() waited the whole 2 s
    // default: 2.1 s of each ioredis subject's 3 s in tests/engine/property_test.ts.
    disconnectTimeout: 200,
  });
  client.on("error", () => {});
  await client.connect();
  const close = async () => {
    if (client.status === "end") return;
    // ioredis ends the socket and keeps a timer (disconnectTimeout) until it is closed: wait
    // for "end" so no timer outlives the test, and at most that long for a socket that a
    // fault left half-open.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ended = new Promise<void>((resolve) => {
      client.once("end", resolve);
      timer = setTimeout(resolve, 300);
    });
    client.disconnect(false);
    await ended;
    clearTimeout(timer);
  };
  return { redis: fromIoredis(client), close, [Symbol.asyncDispose]: close };
}

/** A client's first reservation, which reads the durability in the same script (always EVAL). */
export function isFirstReservation(script: string): boolean {
  return script.includes("'INFO'") && script.includes("'HINCRBY'");
}

/** Wraps a client to count and gate `hincrby`/`eval`/`evalsha` calls (the reservations). */
export class Spy implements RedisClient {
  /** Reservations sent. */
  calls = 0;
  /** Increments asked for, in order. */
  counts: number[] = [];
  /** Reservations in flight now, and the most ever at once. */
  inflight = 0;
  maxInflight = 0;
  /** When set, each reservation waits for this promise before going out. */
  gate: Promise<void> | undefined;
  readonly #inner: RedisClient;
  readonly #waiters: { calls: number; resolve: () => void }[] = [];

  constructor(inner: RedisClient) {
    this.#inner = inner;
  }

  /** Resolves once `calls` reservations were sent (one held at the gate counts): no sleeping. */
  sent(calls: number): Promise<void> {
    if (this.calls >= calls) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ calls, resolve }));
  }

  hincrby(key: string, field: string, n: number): Promise<unknown> {
    return this.#track(Number(n), () => this.#inner.hincrby(key, field, n));
  }
  eval(script: string, keys: string[], args: string[]): Promise<unknown> {
    // Only the reserve script (7 arguments; a first reservation's, which reads the durability
    // too, has HINCRBY and INFO) is a reservation; giving IDs back on close is not.
    if (args.length !== 7 && !isFirstReservation(script)) {
      return this.#inner.eval(script, keys, args);
    }
    // EVAL after a NOSCRIPT completes the EVALSHA counted already; a first use is a reservation.
    const retry = this.#noScript;
    this.#noScript = false;
    return this.#track(Number(args[1]), () => this.#inner.eval(script, keys, args), !retry);
  }
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown> {
    if (args.length !== 7) return this.#inner.evalsha(sha, keys, args);
    return this.#track(Number(args[1]), async () => {
      try {
        return await this.#inner.evalsha(sha, keys, args);
      } catch (err) {
        if (/NOSCRIPT/.test(String((err as Error)?.message ?? err))) this.#noScript = true;
        throw err;
      }
    });
  }
  #noScript = false;

  async #track(n: number, run: () => Promise<unknown>, count = true): Promise<unknown> {
    // The store sends EVALSHA first and EVAL only after NOSCRIPT: count that pair once.
    if (count) {
      this.calls++;
      this.counts.push(n);
      for (const w of this.#waiters.filter((w) => w.calls <= this.calls)) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve();
      }
    }
    this.inflight++;
    this.maxInflight = Math.max(this.maxInflight, this.inflight);
    try {
      if (this.gate) await this.gate;
      return await run();
    } finally {
      this.inflight--;
    }
  }
}

/**
 * A loopback TCP proxy for tests and benches: adds a delay each way, can hold traffic (a hung
 * server or a dead network) and can cut connections (a lost reply).
 *
 * @module
 */

/** A running proxy. */
export interface Proxy extends AsyncDisposable {
  /** Where clients connect: always 127.0.0.1. */
  readonly host: string;
  /** The proxy's port. */
  readonly port: number;
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  /** Delay added to every chunk, each way, in ms; may be changed while running. */
  delayMs: number;
  /** Hold every byte, both ways, until {@linkcode Proxy.resume}. */
  pause(): void;
  /** Forward what was held and what comes next. */
  resume(): void;
  /** Close every open connection (both sides), as a network failure would. */
  dropConnections(): void;
  /**
   * From now on, drop (never forward) what the server sends on replication connections (those
   * on which the client sent `PSYNC`/`SYNC`): the replicas behind this proxy miss every later
   * write while their link looks up. Other connections are untouched.
   */
  cutReplication(): void;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Stop listening and close every connection. */
  close(): Promise<void>;
}

/** Options of {@linkcode startProxy}. */
export interface ProxyOptions {
  /** Delay each way in ms. Default 0. */
  delayMs?: number;
}

/** Start a proxy on a free 127.0.0.1 port forwarding to `target`. */
export function startProxy(
  target: { host: string; port: number },
  options: ProxyOptions = {},
): Promise<Proxy> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const pipes = new Set<Pipe>();
  let paused = false;
  let resumed: PromiseWithResolvers<void> | undefined;
  let accepted = 0;
  let replicationCut = false;

  const proxy: Proxy = {
    host: "127.0.0.1",
    port,
    url: `redis://127.0.0.1:${port}`,
    delayMs: options.delayMs ?? 0,
    get accepted() {
      return accepted;
    },
    pause() {
      if (!paused) {
        paused = true;
        resumed = Promise.withResolvers();
      }
    },
    resume() {
      paused = false;
      resumed?.resolve();
      resumed = undefined;
    },
    dropConnections() {
      for (const p of pipes) p.close();
    },
    cutReplication() {
      replicationCut = true;
    },
    async close() {
      try {
        listener.close();
      } catch { /* already closed */ }
      proxy.resume();
      proxy.dropConnections();
      await accepting;
      await Promise.all([...pipes].map((p) => p.done));
    },
    [Symbol.asyncDispose]() {
      return proxy.close();
    },
  };

  // Forward one direction in order; each chunk waits out the delay and any pause.
  async function forward(from: Deno.Conn, to: Deno.Conn, pipe: Pipe, up: boolean): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    try {
      while (true) {
        const n = await from.read(buf);
        if (n === null) break;
        const chunk = buf.slice(0, n);
        // A replica asks for the stream with PSYNC (or SYNC) as a command of its own.
        if (up && !pipe.replication) pipe.replication = isSync(chunk);
        if (!up && pipe.replication && replicationCut) continue;
        const at = performance.now() + proxy.delayMs;
        while (paused) await resumed!.promise;
        const wait = at - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        while (paused) await resumed!.promise;
        let off = 0;
        while (off < chunk.length) off += await to.write(chunk.subarray(off));
      }
    } catch { /* a side closed */ }
  }

  async function serve(client: Deno.Conn): Promise<void> {
    let server: Deno.Conn;
    try {
      server = await Deno.connect({ hostname: target.host, port: target.port });
    } catch {
      client.close();
      return;
    }
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      for (const c of [client, server]) {
        try {
          c.close();
        } catch { /* already closed */ }
      }
    };
    const pipe: Pipe = { close, done: Promise.resolve(), replication: false };
    pipes.add(pipe);
    // When either direction ends, close both; done once both loops have returned.
    pipe.done = Promise.all([
      forward(client, server, pipe, true).then(close),
      forward(server, client, pipe, false).then(close),
    ]).finally(() => pipes.delete(pipe));
  }

  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        accepted++;
        void serve(conn);
      }
    } catch { /* listener closed */ }
  })();

  return Promise.resolve(proxy);
}

interface Pipe {
  close(): void;
  done: Promise<unknown>;
  /** The client sent PSYNC/SYNC: a replica's replication link. */
  replication: boolean;
}

const SYNC = /(^|\r\n)(\*\d+\r\n\$\d+\r\n)?P?SYNC(\r\n| )/i;

/** True when a client's chunk carries a `PSYNC` or `SYNC` command (RESP or inline). */
function isSync(chunk: Uint8Array): boolean {
  return SYNC.test(new TextDecoder().decode(chunk));
}

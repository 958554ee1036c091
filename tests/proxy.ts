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
  async function forward(from: Deno.Conn, to: Deno.Conn): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    try {
      while (true) {
        const n = await from.read(buf);
        if (n === null) break;
        const chunk = buf.slice(0, n);
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
    const pipe: Pipe = { close, done: Promise.resolve() };
    pipes.add(pipe);
    // When either direction ends, close both; done once both loops have returned.
    pipe.done = Promise.all([
      forward(client, server).then(close),
      forward(server, client).then(close),
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
}

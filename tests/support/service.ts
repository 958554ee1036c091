/** Running the ID service (src/service/mod.ts) for tests and benches: in process, or `deno serve`. */

import { createHandler, type IdService, type ServiceOptions } from "../../src/service/mod.ts";
import { listen } from "../../src/service/serve.ts";
import { lines } from "./lines.ts";

/** The service behind `Deno.serve` on a free 127.0.0.1 port. */
export interface RunningService extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly service: IdService;
  /** What the service logged. */
  readonly logged: string[];
  /** Stop the server (answering what is in flight), then the service. */
  close(): Promise<void>;
}

/**
 * Serve {@linkcode createHandler} with `options` (log captured), behind `Deno.serve` or the
 * service's own listener (`via: "listener"`).
 */
export function serveService(
  options: ServiceOptions,
  via: "deno-serve" | "listener" = "deno-serve",
): RunningService {
  const logged: string[] = [];
  const service = createHandler({ log: (line) => logged.push(line), ...options });
  const server = via === "listener"
    ? (() => {
      const l = listen({ hostname: "127.0.0.1", port: 0, handler: service.fetch });
      return { addr: l.addr, shutdown: l.shutdown };
    })()
    : Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, service.fetch);
  let closed: Promise<void> | undefined;
  const close = () =>
    closed ??= (async () => {
      await server.shutdown();
      await service.close();
    })();
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    service,
    logged,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A `deno serve src/service/mod.ts` child process. */
export interface ServeProcess extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`, once it listens. */
  readonly url: string;
  readonly child: Deno.ChildProcess;
  /** Every stderr line so far. */
  readonly stderr: string[];
  /** Resolves with the first stderr line (so far or to come) matching `re`. */
  waitForLine(re: RegExp): Promise<string>;
  /** Resolves with the exit status. */
  readonly status: Promise<Deno.CommandStatus>;
}

/**
 * Start `deno serve` on a free port with `env` (and nothing else of ours); resolves once it
 * listens, or rejects with its output when it exits first. `module`: what it serves (default
 * this checkout's `src/service/mod.ts`; a bench serves an older checkout's beside it).
 */
export function startServeProcess(
  env: Record<string, string>,
  module: string = new URL("../../src/service/mod.ts", import.meta.url).pathname,
): Promise<ServeProcess> {
  return startProcess(Deno.execPath(), [
    "serve",
    "-A",
    "--unstable-kv",
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    module,
  ], env);
}

/**
 * Start `deno run src/service/serve.ts` (what `deno task serve` runs) with `args` (default: loopback,
 * a free port) and `env`; `nofile` lowers its file-descriptor limit (through `prlimit`).
 */
export function startServiceProcess(
  env: Record<string, string>,
  args: string[] = ["--host", "127.0.0.1", "--port", "0"],
  nofile?: number,
): Promise<ServeProcess> {
  const deno = [
    Deno.execPath(),
    "run",
    "-A",
    "--unstable-kv",
    new URL("../../src/service/serve.ts", import.meta.url).pathname,
    ...args,
  ];
  return nofile === undefined
    ? startProcess(deno[0], deno.slice(1), env)
    : startProcess("prlimit", [`--nofile=${nofile}:${nofile}`, ...deno], env);
}

/** Run `program args` and wait for its "listening on" line (rejects when it exits first). */
export async function startProcess(
  program: string,
  args: string[],
  env: Record<string, string>,
): Promise<ServeProcess> {
  const child = new Deno.Command(program, {
    args,
    env: { NO_COLOR: "1", ...env },
    clearEnv: false,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr: string[] = [];
  const reading = lines(child.stderr);
  let url: string | undefined;
  // next() by hand: a `break` out of `for await` would cancel the stream.
  for (let r = await reading.next(); !r.done; r = await reading.next()) {
    stderr.push(r.value);
    const m = /listening on http:\/\/(?:\[[^\]]+\]|[^:]+):(\d+)\//.exec(r.value);
    if (m) {
      url = `http://127.0.0.1:${m[1]}`;
      break;
    }
  }
  const waiters: { re: RegExp; resolve(line: string): void }[] = [];
  // Keep draining stderr so the child never blocks on a full pipe.
  const drained = (async () => {
    for (let r = await reading.next(); !r.done; r = await reading.next()) {
      stderr.push(r.value);
      for (const w of waiters.splice(0)) {
        if (w.re.test(r.value)) w.resolve(r.value);
        else waiters.push(w);
      }
    }
  })();
  const waitForLine = (re: RegExp) => {
    const seen = stderr.find((l) => re.test(l));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<string>((resolve, reject) => {
      waiters.push({ re, resolve });
      drained.then(() => reject(new Error(`no line matched ${re}:\n${stderr.join("\n")}`)));
    });
  };
  const status = child.status.then(async (s) => {
    await drained;
    return s;
  });
  if (url === undefined) {
    await status;
    throw new Error(`deno serve exited before listening:\n${stderr.join("\n")}`);
  }
  return {
    url,
    child,
    stderr,
    waitForLine,
    status,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch {
        // already exited
      }
      await status;
    },
  };
}

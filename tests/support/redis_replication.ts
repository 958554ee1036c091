/**
 * Replicated Redis for tests: redis-server primaries, replicas and Sentinels started on loopback
 * by the test, and waits on what they report (INFO replication, SENTINEL replies).
 *
 * @module
 */

import { command, redisBinary } from "./redis_server.ts";

const HOST = "127.0.0.1";

/**
 * A redis-server (or `redis-server --sentinel`) process started by a test; valkey-server when
 * `KVID_TEST_SERVER=valkey-server`.
 */
export interface RedisProcess {
  readonly port: number;
  readonly url: string;
  /** SIGKILL it (a crash) and wait for it to exit; no-op once exited. */
  kill(): Promise<void>;
}

/** True when `bin --version` runs. */
export function onPath(bin: string): boolean {
  try {
    return new Deno.Command(bin, { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: HOST, port: 0 });
  try {
    return (listener.addr as Deno.NetAddr).port;
  } finally {
    listener.close();
  }
}

/**
 * Resolves once `check` holds, polling every 50 ms; `ms` is a limit no healthy run comes near
 * (failures surface as errors naming what was awaited), never a synchronisation by time.
 */
export async function until(
  what: string,
  check: () => Promise<boolean>,
  ms = 30_000,
): Promise<void> {
  const deadline = performance.now() + ms;
  let last: unknown;
  while (true) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    if (performance.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${last})` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Start `redis-server` with `args` (one `--name value` pair each) in its own directory under
 * `dir`, on a free port (or `port`), and wait until it answers PING.
 */
export async function startRedis(
  dir: string,
  args: string[][] = [],
  options: { sentinel?: boolean; port?: number } = {},
): Promise<RedisProcess> {
  const port = options.port ?? freePort();
  const home = `${dir}/${port}`;
  await Deno.mkdir(home, { recursive: true });
  const lines = [
    ["port", String(port)],
    ["bind", HOST],
    ["dir", home],
    ["protected-mode", "no"],
    ["daemonize", "no"],
    // No snapshots, AOF on (as the library wants: WAITAOF needs it, on replicas too), and a
    // replica's first sync starts at once (not after the default 5 s delay).
    ...(options.sentinel ? [] : [
      ["save", '""'],
      ["appendonly", "yes"],
      ["repl-diskless-sync-delay", "0"],
    ]),
    ...args,
  ];
  // Sentinel rewrites its configuration file: it needs one of its own.
  const conf = `${home}/redis.conf`;
  await Deno.writeTextFile(conf, lines.map((l) => l.join(" ")).join("\n") + "\n");
  const child = new Deno.Command(redisBinary(), {
    args: options.sentinel ? [conf, "--sentinel"] : [conf],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let exited = false;
  const status = child.status.finally(() => exited = true);
  const proc: RedisProcess = {
    port,
    url: `redis://${HOST}:${port}`,
    async kill() {
      if (!exited) {
        try {
          child.kill("SIGKILL");
        } catch { /* exited meanwhile */ }
      }
      await status;
    },
  };
  try {
    await until(`redis-server on port ${port}`, async () => {
      if (exited) throw new Error(`redis-server on port ${port} exited`);
      return await command(proc.url, "PING") === "PONG";
    }, 10_000);
  } catch (err) {
    await proc.kill();
    throw err;
  }
  return proc;
}

/** `INFO <section>` of the server at `url` as a map. */
export async function info(url: string, section: string): Promise<Map<string, string>> {
  const text = String(await command(url, "INFO", section));
  const map = new Map<string, string>();
  for (const line of text.split("\r\n")) {
    const at = line.indexOf(":");
    if (at > 0) map.set(line.slice(0, at), line.slice(at + 1));
  }
  return map;
}

/** The port Sentinel at `url` names as the master of `name`. */
export async function masterPort(url: string, name: string): Promise<number> {
  const reply = await command(url, "SENTINEL", "get-master-addr-by-name", name) as string[];
  return Number(reply[1]);
}

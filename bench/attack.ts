/**
 * The attacks of issue 24 against both ways of running the ID service, measured: `deno serve`
 * (`Deno.serve`) and `deno task serve` (its own listener), each on Deno KV in memory at a
 * file-descriptor limit of 4,096 (`prlimit`), on 127.0.0.1:
 *
 * 1. 4,100 idle connections (no byte sent): does the process live, is a valid request served
 *    during the flood and once it ends (and how long it takes)?
 * 2. 1,000 half-sent request heads: how many are still open 15 s later?
 *
 *     deno run -A bench/attack.ts
 *
 * @module
 */

import { startProcess } from "../tests/support/service.ts";

const TOKEN = "attack-token-0123456789abcdef";
const ENV = { KVID_TOKENS: `${TOKEN}:*`, KVID_KV_PATH: ":memory:", KVID_REDIS_URL: "" };
const NOFILE = 4096;

async function valid(url: string): Promise<string> {
  const t0 = performance.now();
  try {
    const res = await fetch(`${url}/v1/ids/order`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: AbortSignal.timeout(10_000),
    });
    await res.text();
    return `${res.status} in ${Math.round(performance.now() - t0)} ms`;
  } catch (err) {
    return `failed (${err instanceof Error ? err.name : err}) after ${
      Math.round(performance.now() - t0)
    } ms`;
  }
}

async function open(port: number, n: number, first?: string): Promise<Deno.Conn[]> {
  const conns: Deno.Conn[] = [];
  for (let i = 0; i < n; i++) {
    try {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      if (first) await c.write(new TextEncoder().encode(first));
      conns.push(c);
    } catch {
      break;
    }
  }
  return conns;
}

/** How many of `conns` the server has not closed (a read pending after 200 ms). */
async function stillOpen(conns: Deno.Conn[]): Promise<number> {
  const open = await Promise.all(conns.map(async (c) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const wait = new Promise<"open">((r) => timer = setTimeout(() => r("open"), 200));
    try {
      const r = await Promise.race([c.read(new Uint8Array(64)), wait]);
      return r === "open";
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }));
  return open.filter(Boolean).length;
}

function closeAll(conns: Deno.Conn[]) {
  for (const c of conns) {
    try {
      c.close();
    } catch { /* closed */ }
  }
}

const denoArgs = (entry: string[]) => [`--nofile=${NOFILE}:${NOFILE}`, Deno.execPath(), ...entry];
const targets: [string, string[]][] = [
  [
    "deno serve (Deno.serve)",
    denoArgs([
      "serve",
      "-A",
      "--unstable-kv",
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      new URL("../src/service/mod.ts", import.meta.url).pathname,
    ]),
  ],
  [
    "deno task serve (own listener)",
    denoArgs([
      "run",
      "-A",
      "--unstable-kv",
      new URL("../src/service/serve.ts", import.meta.url).pathname,
      "--host",
      "127.0.0.1",
      "--port",
      "0",
    ]),
  ],
];

for (const [label, args] of targets) {
  console.log(`\n## ${label}, ulimit -n ${NOFILE}`);
  {
    const p = await startProcess("prlimit", args, ENV);
    const port = Number(new URL(p.url).port);
    console.log(`before: valid request ${await valid(p.url)}`);
    const idle = await open(port, 4_100);
    console.log(`${idle.length} idle connections opened`);
    const exited = await Promise.race([
      p.status.then((s) => `exited with code ${s.code}`),
      new Promise<string>((r) => setTimeout(() => r("alive"), 2_000)),
    ]);
    console.log(`2 s later: ${exited}; valid request during the flood: ${await valid(p.url)}`);
    closeAll(idle);
    console.log(`flood ended: valid request ${await valid(p.url)}`);
    const last = p.stderr.filter((l) => /Too many|Uncaught|accept failed/.test(l)).slice(0, 1);
    if (last.length) console.log(`log: ${last[0].slice(0, 160)}`);
    await p[Symbol.asyncDispose]();
  }
  {
    const p = await startProcess("prlimit", args, ENV);
    const port = Number(new URL(p.url).port);
    const slow = await open(port, 1_000, "POST /v1/ids/order HTTP/1.1\r\nHost: x\r\nX-a");
    await new Promise((r) => setTimeout(r, 15_000));
    console.log(
      `${slow.length} half-sent heads: ${await stillOpen(slow)} still open after 15 s; ` +
        `valid request ${await valid(p.url)}`,
    );
    closeAll(slow);
    await p[Symbol.asyncDispose]();
  }
}

import { fromNodeRedis, KvId, type RedisClient } from "../mod.ts";
import { benchClient, benchServer, BENCH_KEY, field } from "./_server.ts";
const server = await benchServer();
const { raw, redis } = await benchClient(server.url);
function logging(inner: RedisClient, log: string[]): RedisClient {
  const t0 = performance.now();
  const w = <T>(name: string, p: Promise<T>) => {
    const s = performance.now() - t0;
    log.push(`${s.toFixed(2)} > ${name}`);
    return p.then((v) => { log.push(`${(performance.now() - t0).toFixed(2)} < ${name}`); return v; }, (e) => { log.push(`${(performance.now() - t0).toFixed(2)} <! ${name} ${e}`); throw e; });
  };
  return {
    hincrby: (k, f, n) => w("HINCRBY", inner.hincrby(k, f, n)),
    eval: (s, k, a) => w("EVAL", inner.eval(s, k, a)),
    evalsha: (s, k, a) => w("EVALSHA", inner.evalsha(s, k, a)),
    sendCommand: (c, a) => w(`${c} ${a?.[0] ?? ""}`, inner.sendCommand!(c, a)),
    waitAof: (k, a, b, c) => w("WAITAOF", inner.waitAof!(k, a, b, c)),
    waitReplicas: inner.waitReplicas,
  };
}
console.log("start");
const sameLog: string[] = [];
const same = logging(redis, sameLog);
for (let r = 0; r < 6; r++) {
  for (const mode of ["new client", "same client"]) {
    const log: string[] = [];
    sameLog.length = 0;
    const client = mode === "new client" ? logging(fromNodeRedis(raw), log) : same;
    const t0 = performance.now();
    const gen = new KvId(field("scratch-" + mode, String(r)), { redis: client, key: BENCH_KEY });
    await gen.next();
    const ms = performance.now() - t0;
    const t1 = performance.now();
    await raw.hIncrBy(BENCH_KEY, "scratch-raw", 1);
    const rawMs = performance.now() - t1;
    await gen.close();
    console.log(mode, (ms * 1000).toFixed(0), "µs; raw", (rawMs * 1000).toFixed(0), (mode === "new client" ? log : sameLog).join(" | ").replace(/Error: ERR unknown command.*/, "unknown"));
  }
}
Deno.exit(0);

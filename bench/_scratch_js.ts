import { KvId, type RedisClient } from "../mod.ts";
import { benchClient, benchServer, BENCH_KEY, field } from "./_server.ts";
const server = await benchServer();
const { raw, redis } = await benchClient(server.url);
let sentAt = 0, repliedAt = 0;
const w: RedisClient = {
  ...redis,
  hincrby: redis.hincrby, eval: (s, k, a) => { sentAt = performance.now(); return redis.eval(s, k, a).finally(() => repliedAt = performance.now()); },
  evalsha: (s, k, a) => { sentAt = performance.now(); return redis.evalsha(s, k, a).finally(() => repliedAt = performance.now()); },
  sendCommand: redis.sendCommand, waitAof: redis.waitAof, waitReplicas: redis.waitReplicas,
};
const a: number[] = [], b: number[] = [], c: number[] = [], raws: number[] = [];
for (let i = 0; i < 60; i++) {
  const t0 = performance.now();
  const g = new KvId(field("js", String(i)), { redis: w, key: BENCH_KEY });
  await g.next();
  const t1 = performance.now();
  if (i >= 5) { a.push(sentAt - t0); b.push(repliedAt - sentAt); c.push(t1 - repliedAt); }
  await g.close();
  const r0 = performance.now(); await raw.hIncrBy(BENCH_KEY, "x", 1); raws.push(performance.now() - r0);
}
const med = (x: number[]) => [...x].sort((p, q) => p - q)[x.length >> 1] * 1000;
console.log("to send", med(a).toFixed(0), "rtt", med(b).toFixed(0), "after", med(c).toFixed(0), "raw", med(raws).toFixed(0));
Deno.exit(0);

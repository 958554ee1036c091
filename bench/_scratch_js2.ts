import { KvId, type RedisClient } from "../mod.ts";
import { RedisStore } from "../src/stores/redis/redis_store.ts";
import { benchClient, benchServer, BENCH_KEY, field } from "./_server.ts";
const server = await benchServer();
const { raw, redis } = await benchClient(server.url);
let sentAt = 0, repliedAt = 0;
const w: RedisClient = {
  ...redis,
  evalsha: (s, k, a) => { sentAt = performance.now(); return redis.evalsha(s, k, a).finally(() => repliedAt = performance.now()); },
};
const store = new RedisStore(w);
let t: Record<string, number> = {};
const wrapped = {
  readsDurability: true, reservesStep: true,
  durability: (k: string, o: any) => { t.dur = performance.now(); return store.durability(k, o).finally(() => t.durDone = performance.now()); },
  reserve: (k: string, f: string, c: number, o: any) => { t.res = performance.now(); return store.reserve(k, f, c, o).finally(() => t.resDone = performance.now()); },
  giveBack: store.giveBack.bind(store), loadStep: store.loadStep.bind(store), saveStep: store.saveStep.bind(store),
};
const rows: number[][] = [];
for (let i = 0; i < 80; i++) {
  t = {};
  const t0 = performance.now();
  const g = new KvId(field("js2", String(i)), { store: wrapped as any, key: BENCH_KEY });
  await g.next();
  const t1 = performance.now();
  if (i >= 5) rows.push([t.res - t0, sentAt - t.res, repliedAt - sentAt, t.resDone - repliedAt, t1 - t.resDone]);
  await g.close();
}
const med = (j: number) => [...rows.map((r) => r[j])].sort((p, q) => p - q)[rows.length >> 1] * 1000;
console.log("to reserve", med(0).toFixed(0), "reserve->send", med(1).toFixed(0), "rtt", med(2).toFixed(0), "reply->resolved", med(3).toFixed(0), "->next", med(4).toFixed(0));
Deno.exit(0);

/**
 * A script as a user writes it: clients made by factories, IDs printed, then `shutdown()`. It
 * must exit by itself (run by tests/engine/stats_shutdown_test.ts). Args: <client kind> <redis url> <kv path>.
 */

import { createClient } from "redis";
import { Redis } from "ioredis";
import { configure, DailyId, fromIoredis, fromNodeRedis, KvId, shutdown } from "../../mod.ts";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";

const [kind, url, kvPath] = Deno.args;
configure({
  redis: kind === "ioredis"
    ? () => fromIoredis(new Redis(url))
    : async () => fromNodeRedis(await createClient({ url }).connect()),
});
const ORDER_ID = new KvId("exits:order");
const ORDER_NO = new DailyId("exits");
const LOCAL_ID = new KvId("exits:local", { store: new DenoKvStore(kvPath) });
console.log(await ORDER_ID.next(), await ORDER_NO.next(), await LOCAL_ID.next());
await shutdown();
console.log("shut down");

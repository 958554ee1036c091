// The built package's types (dist/mod.d.mts) as a Node TypeScript project sees them: .ci/runtimes
// type-checks this file with tsc (strict, module nodenext) against the package installed by npm.
// Not run: only compiled.

import { createClient } from "redis";
import {
  configure,
  DailyId,
  fromNodeRedis,
  KvId,
  KvIdError,
  type KvIdErrorCode,
  type KvIdOptions,
  type KvIdStats,
  type RedisClient,
  shutdown,
} from "@kvid/core";

const redis: RedisClient = fromNodeRedis(
  await createClient({ url: "redis://127.0.0.1:6379" }).connect(),
);
configure({ redis });
const options: KvIdOptions = { minStep: 10 };
const ORDER_ID = new KvId("order", { ...options, bigint: false });
const BIG_ID = new KvId("big", { bigint: true });
const n: number = await ORDER_ID.next();
const b: bigint = await BIG_ID.next();
const batch: number[] = await ORDER_ID.nextBatch(10);
const stats: KvIdStats = ORDER_ID.stats();
const ORDER_NO = new DailyId("order", { timeZone: "Asia/Shanghai" });
const day: string = ORDER_NO.parse(20261130000042).day;
try {
  await ORDER_ID.next();
} catch (err) {
  if (err instanceof KvIdError) {
    const code: KvIdErrorCode = err.code;
    console.log(code);
  }
}
// @ts-expect-error: internals are not exported
import("@kvid/core").then((m) => m.waitForReplicas);
console.log(n, b, batch, stats.step, day);
await shutdown();

// The other entry points of the build, each with its own types.
import type { Store } from "@kvid/core/store";
import { HttpStore } from "@kvid/core/client";
import { decimal, withCodec } from "@kvid/core/codec";
import { PostgresStore } from "@kvid/core/postgres";
import { MySqlStore } from "@kvid/core/mysql";

const sqlStores: Store[] = [
  new PostgresStore({ query: () => Promise.resolve({ rows: [] }) }),
  new MySqlStore({ query: () => Promise.resolve([]) }),
  new HttpStore("http://ids.internal:8000", { token: "0123456789abcdef0123" }),
];
const invoice: Promise<string> = withCodec(new KvId("invoice", { store: sqlStores[0] }), decimal(8))
  .next();
void invoice;

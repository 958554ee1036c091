/**
 * For store authors: the interface a backend implements ({@linkcode Store}), what a reservation
 * takes and returns, and the interleaving store over several independent stores. Applications
 * need none of it: `jsr:@kvid/core` has the generators, and `jsr:@kvid/core/deno-kv` the Deno
 * KV backend.
 *
 * ## Wire format
 *
 * Shared with the Rust crate `kvid`:
 *
 * ```text
 * HINCRBY <key> <name> <step>      # key defaults to "kvid"; reply V reserves V-step+1 .. V
 * ```
 *
 * A new name's first ID is 1. Any mix of Rust and TypeScript processes on one name never collide,
 * because every reservation is one atomic increment of the same field.
 *
 * By default (`guard: true`) the reservation is the same increment inside a small Lua script
 * (`EVAL` on a client's first use, which also caches it on the server, `EVALSHA` after, `EVAL` again
 * on `NOSCRIPT`; the only key is declared in `KEYS`): it first
 * raises the field to the generator's high-water mark if the field is below it (a server that lost
 * data), then runs `HINCRBY`, and returns the new value as a **string**, so values above 2^53 are read
 * exactly (Lua numbers are doubles). The field is compared as a decimal string, never as a Lua number.
 * `guard: false` sends a plain `HINCRBY` and needs no scripting at all; a server that refuses
 * scripting makes the guarded path fall back to it. Names and keys are passed as arguments, never
 * spliced into the script.
 *
 * The same script reads the remembered step (the field `"\0step:<name>"`, which the NUL byte keeps
 * apart from counter names) on a generator's first reservation and reserves at least that many, so
 * the first ID is one round trip; and it takes from the counter's pool (`"\0pool:<name>"`) first
 * when that holds a range above the floor. `close()` gives every unused range back in one more
 * script: the one at the counter's top with a compare-and-set (`HSET` the field to the last ID
 * handed out only if `HGET` still equals the end of that reservation), the others into the pool,
 * so processes restarted in turn leave no gap. The Rust crate neither runs nor reads any of it: its
 * `HINCRBY` goes above every pooled range. `kvid list` leaves those fields out.
 *
 * Commands used: `HINCRBY`, `HGET`, `HSET`, `HDEL`, `EVAL`, `EVALSHA`, all supported by Kvrocks.
 *
 * ## Scaling out
 *
 * Three ways to run it, from simplest to most available:
 *
 * | setup                                                                                    | use it when                                                                          | what it guarantees                                                                                                                                                                                                                                                   |
 * | ---------------------------------------------------------------------------------------- | ------------------------------------------------------------------------------------ | -------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------- |
 * | **one server** (`redis: client`)                                                         | the default: one Redis or Kvrocks, durable (AOF / sync writes), replicas if you like | unique, strictly increasing per generator, dense apart from restart gaps; while it is down, buffered IDs flow, then calls fail after `timeout`                                                                                                                       |
 * | **Redis Cluster** (`fromNodeRedis(createCluster(...))`, `fromIoredis(new Cluster(...))`) | you already run a cluster                                                            | the same as one server: every command touches one key, so the client follows MOVED/ASK and slot moves are transparent (tested with a slot moved twice during a run); a failover has Redis' asynchronous-replication caveat, which `guard` covers for live generators |
 * | **independent servers** (`redis: [a, b, c], block: 1000`)                                | no single point of failure: any one server alive keeps IDs flowing                   | servers never issue the same ID, by construction, whatever happens to the others; strictly increasing per generator; trend-increasing across generators; not dense; needs Lua; N, `block` and the order of servers are fixed for a counter's life                    |
 *
 * **Hash tags on a cluster.** `{kvid}orders` is hashed on `kvid` only, so `{kvid}orders` and
 * `{kvid}users` share one slot while staying separate hashes:
 * `new KvId("x", { redis, key:
 * "{kvid}orders" })`.
 *
 * **How independent servers interleave** (the ticket-server / TinyID scheme). IDs are cut in blocks of
 * `block` IDs; with N servers, server _i_ only issues blocks whose index is _i_ mod N:
 *
 * ```text
 * N = 3, block = 1000
 *
 * IDs     1..1000 | 1001..2000 | 2001..3000 | 3001..4000 | 4001..5000 | 5001..6000 | 6001..
 * block      0    |     1      |     2      |     3      |     4      |     5      |   6
 * server     A    |     B      |     C      |     A      |     B      |     C      |   A
 * cycle m    0    |     0      |     0      |     1      |     1      |     1      |   2
 *
 * server i, cycle m  ->  block m*N + i  ->  IDs (m*N + i)*block + 1 .. (m*N + i + 1)*block
 * ```
 *
 * Each server keeps, in the generator's hash, its next cycle `m` (field `<name>`) and the layout
 * (field `"\0layout:<name>"`, e.g. `v1 servers=3 block=1000 index=1`), written on first use and
 * checked by every reservation: a mismatch (another N, `block` or order) is refused with a `"config"`
 * error, because it would break the residue guarantee; use a new key or name instead. A single-server
 * generator refuses such a counter too, and the set refuses a single-server counter (a value and no
 * layout: its value is an ID, not a cycle).
 *
 * **Any store can be a member** (seed 003's outer and inner steps over several database instances):
 * `new InterleavedStore([new RedisStore(a), new DenoKvStore("./ids.sqlite3")], { block: 1000 })`
 * interleaves a Redis server and a Deno KV file the same way, and `PostgresStore` and `MySqlStore`
 * are members too (several databases, seed 003's outer and inner steps); `redis: [a, b, c]` is that
 * store over one `RedisStore` per client. A member records and checks the layout in the same atomic step as its
 * increment when a reservation carries `ReserveOptions.layout`, and echoes it in the reply; a store
 * that does not (a custom one) is refused as a member with a `"config"` error. Deno KV keeps the
 * layout in the entry `[...prefix, key, "\0layout:<name>"]` next to the counter, the SQL stores in the
 * row's `layout` column.
 *
 * A reservation goes to the next healthy server in turn and takes whole blocks (one range each; a
 * segment may be several ranges). It sends the generator's high-water mark as a floor, so a server
 * that was down or behind jumps to its first block above it. A server that errors or does not answer
 * within a few round trips (at least 200 ms) is skipped and retried after a backoff (up to 2 s). In
 * the tests, killing one of three servers cost at most one such wait and usually none (prefetch
 * covered it); a restarted server was used again after its backoff.
 *
 * Limits: the floor is per generator, so a fresh generator that first reaches a server nobody used
 * since it came back gets that server's old position (unique, but below the front, until it is used
 * again). A server that loses its data can repeat IDs of its own blocks: keep each one durable. More
 * servers bring availability, not throughput per generator (one reservation is in flight at a time).
 *
 * @example An in-memory store, for tests
 * ```ts
 * import { KvId } from "@kvid/core";
 * import type { Store } from "@kvid/core/store";
 * import assert from "node:assert/strict";
 *
 * let counter = 0n;
 * const memory: Store = {
 *   reserve(_key, _field, count) {
 *     counter += BigInt(count);
 *     return Promise.resolve({ ranges: [{ first: counter - BigInt(count) + 1n, last: counter }], raised: false });
 *   },
 * };
 * await using ORDER_ID = new KvId("order", { store: memory });
 * assert.ok(await ORDER_ID.next() === 1);
 * ```
 *
 * @module
 */

export {
  InterleavedStore,
  type InterleavedStoreOptions,
  MAX_MEMBERS,
} from "./interleaved/interleaved_store.ts";
export { RedisStore, type RedisStoreOptions } from "./redis/redis_store.ts";
export { openStore, type OpenStoreOptions, type UrlStore } from "./store_url.ts";
export type {
  AnyReserveOptions,
  AnyStore,
  CachedReads,
  CounterListing,
  CountersOptions,
  CounterValue,
  CounterWords,
  DayCleanup,
  DurabilityFacts,
  DurabilityInReserve,
  DurabilityOptions,
  DurabilityReserveOptions,
  GeneratorOptions,
  GiveBack,
  IdRange,
  MemberReserveOptions,
  PoolReserveOptions,
  Release,
  Reservation,
  ReserveOptions,
  ServerClock,
  StepMemory,
  StepReading,
  StepReserveOptions,
  Store,
  StoreDurability,
} from "../contract/store.ts";
export {
  hasCachedReads,
  hasCounters,
  hasCounterWords,
  hasDayCleanup,
  hasDurability,
  hasGiveBack,
  hasRelease,
  hasServerClock,
  hasStepMemory,
  poolField,
  readsDurabilityInReserve,
  readsStepInReserve,
  stepField,
} from "../contract/store.ts";

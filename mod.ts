/**
 * Globally unique, trend-increasing 64-bit IDs in segment mode on Redis or Kvrocks.
 *
 * Each generator reserves a range of IDs with one atomic `HINCRBY <key> <name> <step>`, hands
 * them out from memory, reserves the next range in the background before the current one runs
 * out, and sizes ranges by how fast IDs are used. No runtime dependencies: pass a `jsr:@db/redis`
 * client as is, or a node-redis / ioredis client through {@linkcode fromNodeRedis} /
 * {@linkcode fromIoredis}.
 *
 * ## How it works
 *
 * ```text
 * next() ──► current segment [1001 ........ 2000]   ◄── no I/O, no lock
 *                                    ▲ 20% left: reserve the next one in the background
 * next segment [2001 ........ 4000]  ◄── HINCRBY kvid order 2000  (one round trip)
 * ```
 *
 * - **Segment** (`src/engine/segment.ts`): a reserved range, handed out in order from memory.
 * - **SegmentBuffer** (`src/engine/segment_buffer.ts`): the current segment and the one reserved ahead; when
 *   the current one runs out it switches without a round trip. It also keeps the generator's
 *   high-water mark and accepts only ranges above it, so one generator's IDs strictly increase.
 * - **Store** (`src/contract/store.ts`, implemented by `src/stores/redis/redis_store.ts`, `src/stores/deno_kv/deno_kv_store.ts`,
 *   `src/stores/postgres/`, `src/stores/mysql/` and `src/stores/interleaved/`, over any of them):
 *   the only I/O. One reservation is one atomic command (on a SQL table, one `UPDATE`).
 * - **KvId** (`src/engine/kvid.ts`): single flight (at most one reservation in flight per generator, however
 *   many callers wait), callers that find no ID wait in call order, a per-call deadline (`timeout`),
 *   retries with exponential backoff and jitter, and the step rule.
 *
 * **Prefetch.** The next reservation starts when `prefetchAt` (20%) of the current one is left, or
 * earlier when, at the rate IDs were taken since the previous reservation, what is left would not
 * outlast four of the slowest recent round trips (short segments on a slow network). It is sent from a
 * task of its own, so the call that crosses the mark does not pay for sending the command.
 *
 * **The step rule** (`stepRule: "doubling"`, the default; the Rust crate's and Leaf's): after each
 * reservation, compare the time since the previous one with `segmentDuration`. Shorter: IDs go fast,
 * the step doubles (at most `maxStep`). Longer: the step halves (at least `minStep`). Equal: it stays.
 * The first reservation asks for `minStep`, or for the step remembered next to the counter (below). It
 * needs about log2(target / `minStep`) reservations to reach a steady rate's target, and then keeps
 * swinging around it: with prefetch, a step is decided on the segment before last, so the swing can
 * exceed ×2 (0.2× to 3.4× of the target at 1 ID/s in the step bench).
 *
 * **`stepRule: "rate"`** sizes the step by the measured rate instead: IDs taken (or waited for) since
 * the previous reservation, divided by the time since, times `segmentDuration`; moving at most ×16 up
 * and ÷2 down per reservation, within `minStep`..`maxStep` like the doubling rule. It reaches and
 * stays within ×2 of the target in 6 to 8 reservations (doubling: 11 to 21, and at 1 or 100 IDs/s it
 * never settles); see the step suite in [bench/RESULTS.md](bench/RESULTS.md). Recommended for new
 * services; the doubling rule stays the default for compatibility with the Rust crate's behaviour.
 *
 * **The remembered step** (`rememberStep: true`, the default): a generator writes its step next to the
 * counter, in the field `"\0step:<name>"` of the same hash, when it changed (at most every 10 s, the
 * first time 10 s after its first reservation, so a process killed young does not pass on a step it
 * doubled at once) and on `close()`; a new generator without `initialStep` reads it in its first reservation (the same
 * script, one round trip for the first ID; a separate lookup before it on Deno KV and without `guard`)
 * and starts there, within `minStep`..`maxStep`, so a restarted or newly scaled process skips
 * the ramp-up; the step rule then adapts it as before. Last writer wins. A counter that never left
 * `minStep` gets no such field. `DailyId` does not use it (a new day starts at the step the day before
 * reached). On Deno KV it is the entry `[...prefix, key, "\0step:<name>"]`. Measured (2026-12-01,
 * redis 7.0, 2 shared cores): in the first 3 s of a ramp to 200,000 IDs/s after a restart, 2 round
 * trips and 5 calls waiting for a reservation instead of 20 and 34
 * (bench/restarts.ts). Several processes restarted together each start with a large segment; on
 * `close()` what they did not use goes back to the counter's pool (see _What a restart costs_).
 *
 * **No ramp-up for a new name**: under both rules the step is at least what the callers take in 8
 * round trips at the rate seen since the previous reservation (over the first round trip, for the
 * first), so a new name under load skips the doublings that would each make its callers wait, while
 * an idle one stays small (one call on a new name: 8 IDs). Measured on 10,000 new names in one
 * process (bench/deploy_bench.ts, 2026-12-01): 2 reservations per name instead of 6, and no call
 * waited once its name's first reservation had landed (before: 78,050 of 128,050).
 *
 * Either way, callers already waiting size a reservation up to `maxStep` (1,000 callers at a boundary
 * take one round trip, not 1,000 / step).
 *
 * ## Options
 *
 * | option            | default           | meaning                                                                                                                                          |
 * | ----------------- | ----------------- | ------------------------------------------------------------------------------------------------------------------------------------------------ |
 * | `redis`           | `configure()`'s   | a client, or a function returning one (sync or async), called on first use and shared; an array of them: independent servers (see _Scaling out_ in `@kvid/core/store`) |
 * | `block`           | `1_000`           | with an array of servers: IDs per interleaved block                                                                                              |
 * | `key`             | `"kvid"`          | the hash holding the counters                                                                                                                    |
 * | `minStep`         | `1`               | smallest step, and the first                                                                                                                     |
 * | `maxStep`         | `1_000_000`       | largest step                                                                                                                                     |
 * | `initialStep`     | `minStep`         | the first step: a service that knows its rate skips the ramp-up                                                                                  |
 * | `segmentDuration` | `600_000` ms      | target time between reservations, which the step adapts to                                                                                       |
 * | `prefetchAt`      | `0.2`             | fraction of a segment left when the next is reserved in the background; `0` turns prefetch off                                                   |
 * | `timeout`         | `5_000` ms        | how long one reservation may take, and how long a call waits for an ID when none is buffered                                                     |
 * | `failFast`        | `true`            | once the store is known down, a call with no ID buffered fails at once (`"unavailable"`) while one probe retries (see _Operating it_)            |
 * | `bigint`          | `false`           | `bigint` IDs, exact to 2^63-1 (`KvId<bigint>`)                                                                                                   |
 * | `guard`           | `true`            | send the high-water mark as a floor with each reservation (Lua); `false`: plain `HINCRBY`, no Lua                                                |
 * | `rollbackMargin`  | `0`               | how far past the floor a counter found below it is raised                                                                                        |
 * | `replicas`        | `0`               | hand a reservation's IDs out only once this many replicas acknowledged it (`WAIT`; see _Replicated Redis_)                                       |
 * | `waitAof`         | `true`            | hand a reservation's IDs out only once the server fsynced it to its AOF (`WAITAOF 1 0`; Redis/Valkey >= 7.2, skipped without it; see _Operating it_) |
 * | `rememberStep`    | `true`            | remember the step next to the counter and start from it (see _How it works_); `initialStep` wins                                                 |
 * | `giveBack`        | `true`            | on `close()`, give every unused ID back: to the counter at its top, else to its pool, which the next reservation takes first (see _What a restart costs_) |
 * | `stepRule`        | `"doubling"`      | how the step adapts: `"doubling"` or `"rate"` (see _How it works_)                                                                               |
 * | `clock`           | `performance.now` | millisecond clock the step adapts by (inject one in tests)                                                                                       |
 * | `store`           | –                 | a custom `Store` instead of `redis` (other backends, tests)                                                                                      |
 * | `durability`      | `"strict"`        | refuse a store that can lose reservations (see _Operating it_); `"best-effort"` serves from it                                                   |
 * | `serverSettings`  | `{}`              | settings the server will not tell, stated by you (`{ appendonly: "yes" }`)                                                                       |
 * | `floor`           | –                 | `() => largest ID your data holds`: the counter is raised above it before any ID is served (see _Operating it_)                                  |
 *
 * Names and keys are non-empty, well-formed Unicode strings of at most 4,096 UTF-8 bytes. Options are
 * validated at construction: a wrong type (`null` included) is a `TypeError`, a value out of range a
 * `RangeError`, an unknown option a `TypeError`, each naming the option.
 *
 * ## Errors
 *
 * Store failures reject with a `KvIdError` whose `code` says what went wrong, whose `key` and `field`
 * name the counter, and whose `cause` is the client's error:
 *
 * | code          | when                                                                                                                                                                                                                            |
 * | ------------- | ------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------- |
 * | `timeout`     | no ID could be reserved within `timeout` (server down, network hung); its `cause` is the last store error                                                                                                                       |
 * | `connection`  | the client failed before the server answered                                                                                                                                                                                    |
 * | `unavailable` | the server said it cannot serve for now (`LOADING`, `READONLY`, `MASTERDOWN`, `BUSY`, `TRYAGAIN`, `CLUSTERDOWN`, and Kvrocks' words for them); or, with `failFast`, the store is known down (see below)                         |
 * | `conflict`    | Deno KV: optimistic writes kept losing to other writers                                                                                                                                                                         |
 * | `reply`       | the server refused: the field holds a non-integer (or a negative value), the key is not a hash, ...                                                                                                                             |
 * | `overflow`    | the counter would pass 2^63-1 (the server refuses; nothing wraps around)                                                                                                                                                        |
 * | `unsafe`      | number mode, and the next ID would be above `Number.MAX_SAFE_INTEGER`: use `bigint: true`                                                                                                                                       |
 * | `rollback`    | without `guard`, the counter went below IDs this generator already issued                                                                                                                                                       |
 * | `closed`      | the generator was closed                                                                                                                                                                                                        |
 * | `config`      | a setup mistake waiting cannot fix: no client; auth failed; `NOPERM`; a command renamed or disabled; Deno KV without `--unstable-kv` or its directory; a `clock` reading that is not a finite number; a counter layout mismatch; a store that can lose reservations (`durability`: no AOF, `allkeys-*` eviction, a server that will not say), naming the fix; a `floor` option returning a non-integer |
 *
 * **Transient** (`timeout`, `connection`, `unavailable`, `conflict`): a reservation that fails so is
 * retried with exponential backoff and jitter (capped at 2 s and at half of `timeout`) until the
 * caller's deadline; the call then rejects with `timeout`, the server's words in its `cause`. An error
 * reaches callers only when no buffered ID is left: while the server is down, buffered IDs keep
 * flowing. **Refusals** (`reply`, `overflow`, `unsafe`, `rollback`) and **setup mistakes** (`config`)
 * fail at once, whatever `timeout` is, the reason in the message; the next call after a short backoff
 * tries again, so a fixed setup resumes by itself. **During a known outage** (`failFast`, the default)
 * calls fail at once with `unavailable` instead of waiting out `timeout` (see _Operating it_). A
 * failed reservation never wedges the generator.
 *
 * ## The rest of the API
 *
 * ```ts ignore
 * import { createClient } from "npm:redis@5";
 * import { fromNodeRedis, KvId } from "@kvid/core";
 *
 * const redis = fromNodeRedis(await createClient({ url: "redis://127.0.0.1:6379" }).connect());
 * const ORDER_ID = new KvId("order", { redis });
 *
 * const ids = await ORDER_ID.nextBatch(1000); // 1000 increasing IDs, one await, few round trips
 *
 * const BIG = new KvId("big", { redis, bigint: true }); // KvId<bigint>
 * const big: bigint = await BIG.next();
 * const high: bigint = BIG.high; // the highest ID reserved, exactly
 *
 * const stats = ORDER_ID.stats(); // plain data: Response.json(stats) and JSON.stringify work
 * // { name, key, step, remaining, segments, failures, stalls, lastFetchMs, high: "1000",
 * //   rollbacks, durability: { mode, durable, problems, settings }, ttlRemovals, reserving,
 * //   lastError: { code, message } | undefined }
 *
 * ORDER_ID.addEventListener("rollback", (e) => console.warn("counter went back", e.detail));
 *
 * await ORDER_ID.close(); // or: await using id = new KvId(...)
 * await BIG.close();
 * await redis.close?.(); // a client passed as a value is yours to close
 * ```
 *
 * `close()` rejects pending and later calls with a `"closed"` error and waits for a reservation in
 * flight (at most `timeout`). The Redis client is yours: close it after the generators (or let
 * `shutdown()` close a client a factory made).
 *
 * ## Guarantees by setup
 *
 * Which setup gives which guarantee:
 *
 * | setup                                                                                                                            | unique, exact up to                                                                                                                                                                                    |
 * | -------------------------------------------------------------------------------------------------------------------------------- | ------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------ |
 * | number mode (the default), any client, any server                                                                                | `Number.MAX_SAFE_INTEGER`; past it (or on a rounded reply at or above 2^53) calls reject with `"unsafe"`. A range crossing 2^53 is served up to it when its end is read exactly (the guard script's string reply, node-redis, Deno KV); a rounded plain `HINCRBY` reply (ioredis or `@db/redis` with `guard: false` or no scripting) is refused whole, so its IDs below 2^53 are a gap (`tests/exact_replies_test.ts`)                                 |
 * | bigint mode, a client reading integers exactly (node-redis through `fromNodeRedis`, ioredis with `stringNumbers: true`, Deno KV) | 2^63-1, with or without scripting on the server                                                                                                                                                        |
 * | bigint mode, a rounding client (ioredis default, `@db/redis`), server with scripting                                             | 2^63-1: the first rounded reply costs one range, every later reservation runs the script                                                                                                               |
 * | bigint mode, a rounding client, server **without** scripting (EVAL/EVALSHA disabled)                                             | up to 2^53; above, calls reject with a `"config"` error naming the fix (ioredis `stringNumbers: true`, or enable scripting); never a duplicate                                                         |
 * | `guard: false`, or a server without scripting                                                                                    | unique as above while the counter never goes back; if it does, each generator skips IDs at or below its own mark (a range wholly below is a `"rollback"` error) and nothing raises the counter         |
 * | interleaved servers (`redis: [a, b, c]`)                                                                                         | 2^63-1 (the script's replies are strings); unique across servers by construction; needs scripting                                                                                                      |
 * | `DailyId`                                                                                                                        | unique per day and name; cleanup (`keepDays`) never deletes a day in use by a process whose clock runs ahead, nor by one lagging the server's clock by less than `keepDays` days (see _Daily serials_ in the docs of `DailyId`) |
 *
 * Which server setting gives which guarantee (what the default, `durability: "strict"`, does with it;
 * read from the server before the first reservation and again after a transient failure, a refusal
 * or a rollback):
 *
 * | server setting                                                     | the default                                  | what is lost                                                                                                             |
 * | ------------------------------------------------------------------ | -------------------------------------------- | ------------------------------------------------------------------------------------------------------------------------ |
 * | Redis/Valkey `appendonly yes`, `appendfsync always`                 | serves                                       | nothing, even on a power cut                                                                                             |
 * | `appendonly yes`, `appendfsync everysec` (or `no`)                 | serves                                       | a `kill -9` of the server nothing; a machine crash or power cut the last second (`no`: ~30 s) of reservations            |
 * | `appendonly no` (snapshots only, `save 3600 1 300 100 60 10000`)   | **refuses** (`"config"`, naming the fix)     | with `"best-effort"`: a crash goes back to the last snapshot; fresh generators re-issue every ID since (tested: all)     |
 * | `appendonly no` + `replicas: N` (`WAIT`)                           | serves                                       | every node restarting at once; a primary restarting empty before a failover (its replicas resync the empty data set)     |
 * | `INFO` forbidden (the server will not say)                         | **refuses** until `serverSettings` states it | what the stated settings lose                                                                                             |
 * | `CONFIG` forbidden (managed servers)                               | serves, `appendfsync` taken as `everysec`    | as `everysec`                                                                                                            |
 * | `maxmemory-policy allkeys-*`                                       | **refuses, in every mode**                   | (would be) the whole hash on memory pressure: every counter restarts at 1 (tested: 20,000 of 20,000)                     |
 * | `maxmemory-policy volatile-*`, or a TTL on the hash                | serves, **removes the TTL** in the reservation | a TTL shorter than the time to the next reservation still expires the hash: the guard protects live generators, `floor` fresh ones |
 * | Kvrocks (RocksDB WAL before each reply), `sync no` / `sync yes`    | serves                                       | `no`: a machine crash the latest writes; `yes`: nothing                                                                  |
 * | Deno KV                                                            | serves                                       | nothing (a commit returns once durable)                                                                                  |
 * | a custom `store` without `durability()`                            | serves (trusted)                             | what that store loses                                                                                                    |
 *
 * The probe is one script (`INFO server`, `persistence`, `memory` and the hash's `PTTL`) with three
 * `CONFIG GET`s pipelined beside it, once per client and hash. On Redis it is the first
 * reservation's own script: it reserves only on a server it serves (a refused server's counter
 * is never touched), so a client's first ID is one round trip. The generators made on a client
 * after an accepted read share it and reserve at once (their first ID one round trip too), until
 * a generator has a reason to doubt it (a transient failure, a rollback or a refusal: then the
 * next read of every client asks the server again). Nothing on the hot
 * path, nothing per segment; a generator's own re-read after a failure or a rollback goes beside
 * that reservation. A generator made later on a client therefore trusts the read of an earlier
 * one, as that earlier generator itself does until it doubts it. Measured (2026-12-01, redis 7.0.15 on loopback, 2 cores at load 12,
 * `deno run -A bench/durability.ts`, 500 fresh generators): the first ID after a median 0.42 ms
 * (p90 0.70 ms) with the probe, 0.19 ms (p90 0.33 ms) without; 6 commands to the first ID instead
 * of 2. The extra time is the server writing and the client parsing the `INFO` text.
 *
 * The property test (`tests/property_test.ts`, fast-check) checks the first two points and that every
 * call settles, over random options, stores (one Redis, one without scripting, interleaved servers,
 * Deno KV), both npm clients and faults (paused, cut and slow links, counters lowered, `close()`
 * mid-flight), that every ID of a single counter lies between its start and its end, that a call
 * fails only with the codes its scenario allows (a refusal only where the setup calls for one) and
 * that a generator with no fault and no refusal due hands out IDs: 40 seeded runs in the suite,
 * 3-10 s on a loaded 2-core machine (`KVID_PROPERTY_SEED`, `KVID_PROPERTY_RUNS` for more).
 *
 * ## Replicated Redis
 *
 * Redis replicates asynchronously: the primary answers `HINCRBY` before its replicas have it. If the
 * primary dies then, the replica promoted in its place lacks the latest reservations. `guard` keeps
 * each _live_ generator above its own high-water mark, but the IDs of a generator that stopped in the
 * meantime are protected by nothing: a fresh generator on the new primary issues them again. The
 * Sentinel test stages exactly that and, with `replicas: 0`, sees all 30 such IDs re-issued.
 *
 * `replicas: N` closes the hole. After each reservation the generator sends `WAIT N <ms>` on the same
 * connection and hands the range out only once the server says N replicas acknowledged it. A range not
 * confirmed in time (`WAIT` gets 90% of `timeout`) is spent, never handed out: the reservation is
 * retried like a lost one, and a call left without an ID rejects with `"timeout"`, its `cause` naming
 * the count seen (`the reservation reached 0 of 1 replicas within 1800 ms; its IDs are spent`).
 * Reservations are rare (one per segment, prefetched), so the hot path does not see it.
 *
 * ```ts ignore
 * import { createSentinel } from "npm:redis@5";
 * import { Redis } from "npm:ioredis@5";
 * import { fromIoredis, fromNodeRedis, KvId } from "@kvid/core";
 *
 * const sentinels = [{ host: "10.0.0.1", port: 26379 }, { host: "10.0.0.2", port: 26379 }];
 * // node-redis 5: keep masterPoolSize at its default, 1 (see "WAIT and connections" below).
 * const sentinel = await createSentinel({ name: "ids", sentinelRootNodes: sentinels }).connect();
 * export const ORDER_ID = new KvId("order", { redis: fromNodeRedis(sentinel), replicas: 1 });
 * // ioredis: a Sentinel-aware client of its own for the generators.
 * const io = new Redis({ sentinels, name: "ids" });
 * export const USER_ID = new KvId("user", { redis: fromIoredis(io), replicas: 1 });
 * ```
 *
 * Failover is the client's job: the ioredis and node-redis Sentinel clients find the new primary, and
 * the generators carry on (reservations that fail meanwhile are retried until each call's deadline).
 * In the test, node-redis 5.12's Sentinel client kept one client of the dead primary reconnecting
 * after the switch (harmless, but it never stops); the test's node-redis clients stop reconnecting
 * once the primary is killed.
 *
 * | setup                                          | no ID issued twice after a failover or a loss?                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                  |
 * | ---------------------------------------------- | --------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------- |
 * | **single primary, no replica**                 | what its persistence keeps (see _Operating it_: `appendfsync always`, or `waitAof` on Redis/Valkey >= 7.2, loses nothing). Leave `replicas` at 0: `WAIT` with no replica never confirms                                                                                                                                                                                                                                                                                                                                                                                                                                                               |
 * | **Sentinel / managed failover, `replicas: 0`** | live generators: yes (`guard`). IDs that a generator which has stopped took from a reservation the promoted replica never got: **re-issued** (tested)                                                                                                                                                                                                                                                                                                                                                                                                                                                           |
 * | **Sentinel, `replicas: N`**                    | yes when the promoted replica is one that acknowledged: always with N = the number of replicas; with fewer, only if Sentinel picks an acknowledging one: it prefers the lowest `replica-priority`, then the greatest replication offset, so with equal priorities it promotes the most advanced eligible replica, which has every acknowledged range unless all acknowledging ones are ineligible (down, disconnected too long, `replica-priority 0`). Tested: 0 IDs re-issued. Fewer than N replicas connected: no reservation succeeds, calls fail with `"timeout"` (so N = replicas - 1 survives losing one) |
 * | **Redis Cluster, `replicas: N`**               | the same per shard: `WAIT` goes to the master owning the counter's slot, over the connection that reserved (both adapters route it; tested: `WAIT`s only on that master). Tested: the counter's master killed mid-run, its replica promoted, the old master back as its replica: no duplicate                                                                                                                                                                                                                                                                                                                   |
 * | **independent servers** (`redis: [a, b]`)      | by construction servers never share an ID; a server that loses data can repeat its own blocks only. With `replicas`, each server's blocks wait for that server's replicas (a server that cannot confirm is skipped, its blocks spent)                                                                                                                                                                                                                                                                                                                                                                           |
 * | **Deno KV**                                    | a commit returns only once it is durable, and there is no asynchronously replicated copy to promote that could lack it: nothing to wait for, `replicas` does not apply (the Deno KV store ignores it)                                                                                                                                                                                                                                                                                                                                                                                                           |
 *
 * **WAIT and connections.** `WAIT` blocks the connection it is sent on until the replicas answer (one
 * replica round trip when they are healthy; up to 90% of `timeout` when one is missing). A client
 * shared with the application makes every command sent after it queue behind it, and generators
 * sharing a client queue behind each other's `WAIT`s. Give the generators a client of their own (a
 * factory, `redis: () => createClient(...).connect()`, is called once and shared by the generators it
 * is passed to). `WAIT` counts the writes of its own connection only, so the reservation and the
 * `WAIT` must share one: single-connection clients do (`jsr:@db/redis`, node-redis `createClient`,
 * `createCluster` and `createSentinel` with the default `masterPoolSize: 1`, ioredis `Redis` and
 * `Cluster`). A pool that may send them on two connections (node-redis `createClientPool`,
 * `masterPoolSize > 1`, a proxy pooling server connections) would see `WAIT` confirm at once without
 * checking anything: do not use one with `replicas`. A hand-written client can define
 * `waitReplicas(key, n, ms)`; otherwise `sendCommand("WAIT", ...)` is used, and a client with neither
 * is a `"config"` error at the first reservation. So is a server without `WAIT`
 * (`the
 * server has no WAIT command`), instead of a hang.
 *
 * **Kvrocks.** `WAIT` arrived in Kvrocks 2.13.0 (apache/kvrocks#3047, then acknowledgements from
 * replicas in #3061 and #3075). Its semantics differ from Redis': it waits for the server's latest
 * write, not the connection's (it may wait longer, never less), and its `timeout` argument is honoured
 * only since apache/kvrocks#3117 (merged August 2025, after 2.13.0): on a Kvrocks without it, a
 * missing replica keeps the connection blocked past the generator's `timeout` (calls still reject at
 * their deadline). Before 2.13 there is no `WAIT`: `replicas` is a `"config"` error there. Read from
 * Kvrocks' pull requests, not run here (the tests use redis-server 7.0).
 *
 * **Measured** on 2026-12-01 (2 cores shared with other jobs, load 4–5, redis-server 7.0.15 on
 * loopback, `deno bench -A bench/replicas_bench.ts`): a reservation round trip 52 µs with
 * `replicas: 0`, 94 µs with `replicas: 1` (+42 µs, the replica's acknowledgement); `next()` per ID
 * over 100,000 IDs from a cold start 46 ns and 47 ns. The failover in `tests/sentinel_test.ts`
 * (Sentinel `down-after-milliseconds 1000`): the replica promoted 1.4–2.5 s after the primary was
 * killed; callers asking for IDs through it with `replicas: 1` waited at most 2.5 s (ioredis) and 4.1
 * s (node-redis, which learns of the switch later), with no error (`timeout: 30_000`; the test
 * asserts no error and IDs after the kill). In the Cluster test (`cluster-node-timeout 3000`) no call
 * of two generators failed across the master's death, the promotion and the old master's return
 * (asserted, with `timeout: 60_000`: a slow machine waits longer, it does not fail).
 *
 * ## Operating it
 *
 * ### Server settings: make a restart lose nothing
 *
 * A reservation must be on disk before its reply, or a crash can hand the same range out twice. By
 * default (`durability: "strict"`) a generator reads the server's settings first and refuses a server
 * that keeps no AOF with a `"config"` error naming the fix, and an `allkeys-*` eviction policy in
 * every mode (`maxmemory-policy noeviction`); see _Guarantees by setup_ for each setting.
 * `durability: "best-effort"` is the one way to serve from a server without AOF (a cache, a test):
 * `stats().durability.problems` then says what a crash loses. `kvid durability` prints the same, and
 * the service's `/readyz` answers 503 with the reason under `KVID_DURABILITY=strict` (the default).
 *
 * **The independent floor** (`floor`): what no server setting covers (a restore from an old backup,
 * `FLUSHALL` while no generator lives, an empty server in place of the old one, a failover to a
 * stale replica without `replicas`) is covered by the largest ID your own data holds:
 * `floor: async () => (await db.query("SELECT max(id) FROM orders")).rows[0].max ?? 0`. It is asked
 * before the first reservation (one call per generator) and whenever the counter is found below the
 * generator's mark; the guard script raises the counter above it before any ID is served (a range
 * found below it is spent). It covers IDs your data holds, not ones handed out and not yet stored. A
 * floor that rejects fails the reservation as `"unavailable"` (retried).
 *
 * | server  | setting                                   | what it buys                                                  |
 * | ------- | ----------------------------------------- | ------------------------------------------------------------- |
 * | Redis, Valkey >= 7.2 | `appendonly yes`, either `appendfsync`, `waitAof` (the default) | no ID served before its reservation is fsynced (`WAITAOF 1 0`): nothing lost, ever |
 * | Redis   | `appendonly yes` + `appendfsync always`   | each reservation fsynced before its reply: nothing lost, ever |
 * | Redis   | `appendonly yes` + `appendfsync everysec` | a machine crash or power cut can lose the last second or so (a crash of the server process alone loses nothing: tested, `kill -9`) |
 * | Redis   | RDB snapshots only, or no persistence     | refused by default (`durability: "strict"`); with `"best-effort"` a restart rolls counters back to the snapshot, or to nothing |
 * | Kvrocks | `rocksdb.write_options.sync yes`          | each write's WAL fsynced before the reply: nothing lost, ever |
 * | Kvrocks | default (`sync no`)                       | a machine crash can lose the latest writes                    |
 *
 * **`waitAof`** (on by default): after each reservation the generator sends `WAITAOF 1 0 <ms>` on the
 * same connection and hands the range out only once the server says it is fsynced to its AOF; a range
 * not confirmed within 90% of `timeout` is spent (a gap), like one `WAIT` did not confirm. A server
 * that keeps no AOF, also one turned off at run time (`CONFIG SET appendonly no`), is refused with a
 * `"config"` error naming the fix (`appendonly yes`, or `waitAof: false`): its reservations fail and
 * none of their IDs is served (tested on Valkey 8.0). Where the server has no `WAITAOF` (Redis 7.0,
 * Kvrocks: `unknown command`, asked once per client) or the client cannot send it (no `sendCommand`),
 * it is skipped and durability is the server's setting in the table. With `replicas` it comes before
 * `WAIT`; replicas confirm receipt, not their fsync (`WAITAOF 1 N` waits for a replica's
 * once-a-second ACK: 1,020 ms a reservation with `everysec` replicas). It needs the same connection
 * as the reservation, as `WAIT` does (see _WAIT and connections_). On by default because it costs one
 * round trip per reservation, which prefetch hides: measured on 2026-12-01 by `deno run -A
 * bench/waitaof.ts` (valkey-server 8.0.1 on loopback, 2 cores at load 16 from other work, medians of
 * 8 A B B A rounds), with `appendfsync everysec` a reservation 0.075 ms without and 0.125 ms with it,
 * a cold start (a new generator's first ID) 0.096 and 0.142 ms, `next()` per ID over 100,000 IDs
 * from a fresh generator 89 and 106 ns; with `always` (the fsync dominates) 2.4 and 3.0 ms, 2.5 and
 * 3.2 ms, 963 and 878 ns (noise at that load). `kill -9` of redis-server and valkey-server with
 * `everysec` and with `always`, a generator alive across it and a fresh one after it: 0 IDs re-issued
 * (`tests/faults/crash_aof_test.ts`).
 *
 * `appendfsync always` is cheap here: the server sees one write per segment, not per ID. A failover to
 * a replica that had not received the latest reservations is a rollback too (replication is
 * asynchronous): treat it like a loss below.
 *
 * ### What a restart costs
 *
 * - **A process that dies** (crash, `kill -9`, no `close()`): the IDs it had buffered are never handed
 *   out, a gap of about one step (up to `2 × step` with prefetch; `stats().step` says how much): at
 *   the defaults (`segmentDuration` 10 min, `maxStep` 1,000,000) up to 2M IDs, about 2 ×
 *   `segmentDuration` of its traffic when that is less. Nothing else: a new process reserves above
 *   everything reserved before. `segmentDuration` is the knob: shorter, smaller gaps and more round
 *   trips (one per `segmentDuration` at a steady rate). Measured (bench/deploy_bench.ts, 2026-12-01):
 *   4 processes at 50,000 IDs/s, one killed and restarted every 1.25 s, density 0.61 to 0.63
 *   (before this release 0.66 to 0.75: the steps grew more slowly).
 * - **A clean shutdown** (`close()` or `shutdown()`): every unused ID it buffered (and those of a
 *   reservation that lands during `close()`) is given back, in one script: the range at the counter's
 *   top lowers the counter (a compare-and-set: only if it still equals the end of that reservation),
 *   the others go to the counter's pool, the field `"\0pool:<name>"` (at most 64 ranges, sorted,
 *   adjacent ones merged). Every reservation takes from the pool first, in its own script, the lowest
 *   range above the IDs the reserving generator already holds (so IDs still strictly increase per
 *   generator), at most the count it asked for; a counter found rolled back drops its pool (its
 *   ranges may have been handed out since). So processes restarted in turn leave no gap: measured
 *   (2026-12-01, redis 7.0, 2 shared cores), 4 processes at 50,000 IDs/s each, restarted with
 *   `close()` in turn every 5 s, 3 cycles: density 1.000 (every ID the counter rose by handed out or
 *   in the pool; before, 0.43 to 0.49), with fewer server commands per restart (17 to 22 instead of
 *   32). A pooled range can be handed out after IDs above it (trend-increasing across processes, as
 *   ever; a range waits in the pool until a generator below it or a new one reserves). Not given
 *   back: without scripting (a plain read then write could lower a counter another process just
 *   raised), with `guard: false` (plain `HINCRBY` never reads the pool), with interleaved servers,
 *   after a crash, to a full pool, or with `giveBack: false`. On Deno KV only the top range is given
 *   back (an atomic operation on the entry's versionstamp), as before.
 * - **The server, with the settings above**: calls keep getting buffered IDs. The first call that
 *   finds none waits up to `timeout` while reservations are retried, then rejects with a `"timeout"`
 *   `KvIdError`. From then on the store is known down: with `failFast` (the default) a call that finds
 *   no ID rejects at once with `"unavailable"` (its `cause` the last store error) while one probe at a
 *   time retries in the background, at most `min(2 s, timeout / 2)` apart, as long as calls keep
 *   coming; the first probe that succeeds serves calls again. With `failFast: false` every such call
 *   waits its whole `timeout`. A reservation abandoned at its timeout that the server applies later is
 *   spent: a gap, never a duplicate.
 * - **Transient server states** (a restart loading its data: `LOADING`; a failover: `READONLY` from
 *   the demoted primary, `MASTERDOWN` from a replica cut off; a long script: `BUSY`; a cluster
 *   resharding or not covering a slot: `TRYAGAIN`, `CLUSTERDOWN`; writes refused for too few replicas
 *   `NOREPLICAS` (`min-replicas-to-write`), out of memory `OOM` (`maxmemory` with `noeviction`), a
 *   failed save `MISCONF` (`stop-writes-on-bgsave-error`)): reservations are retried until the
 *   caller's deadline, then `"timeout"` with the server's words in the `cause` (`"unavailable"`; the
 *   service answers 503 with `Retry-After`, not 500); tested against real servers in each state
 *   (`tests/faults/states_test.ts`).
 * - **A blocked event loop** (synchronous work, a long GC pause) is not an outage: a deadline timer
 *   that fires more than 50 ms late gives the reply once more the time it was late (at most
 *   `timeout`) before the call fails or the store is marked down, so a healthy server's reply, already
 *   in the socket, serves the call. Before: 1,500 ms of synchronous work with `timeout: 500` failed
 *   the waiting call (`"timeout"`) and the next 15 (`"unavailable"`); now all are served, with no
 *   failure counted (`tests/faults/blocked_loop_test.ts`). A server that does not answer still fails
 *   the call, later by at most the time the loop was blocked plus `timeout`.
 *
 * What an outage costs a caller, measured on 2026-12-01 by `deno run -A bench/outage.ts` (Redis 7.0.15
 * killed, then restarted with its AOF; defaults, `timeout` 5,000 ms; the clients' default reconnect; 2
 * cores, load average 0.7 to 2 from other work). "Back" is from the server answering again to the
 * first ID served, after a short outage (about 6 s) and after a long one (`KVID_OUTAGE_MS=20000`: 26
 * s, a call every 50 ms meanwhile):
 *
 * | client     | `failFast`       | first call | each later call while down | back (6 s) | back (26 s) |
 * | ---------- | ---------------- | ---------- | -------------------------- | ---------- | ----------- |
 * | node-redis | `true` (default) | 5,004 ms   | 17 µs (`"unavailable"`)    | 228 ms     | 348 ms      |
 * | ioredis    | `true` (default) | 5,001 ms   | 7 µs (`"unavailable"`)     | 238 ms     | 422 ms      |
 * | node-redis | `false`          | 5,002 ms   | 5,002 ms (`"timeout"`)     | 310 ms     | 1,974 ms    |
 * | ioredis    | `false`          | 5,002 ms   | 5,001 ms (`"timeout"`)     | 313 ms     | 187 ms      |
 *
 * The time back is the client's reconnect plus at most one probe interval: after a long outage, expect
 * up to `min(2 s, timeout / 2)` plus the reconnect. A call made while no probe is pending (nobody
 * asked since the last one failed) waits for a reservation as the first one did.
 *
 * - **The server, losing data** (no persistence, a machine crash with `everysec`, a stale replica):
 *   each live generator with `guard` (the default) sends its high-water mark with every reservation;
 *   the first one after the loss finds the counter below it, raises it to the mark (plus
 *   `rollbackMargin`), emits `"rollback"` and counts it in `stats().rollbacks`. Every generator alive
 *   across the loss stays above its own mark. What per-generator marks **cannot** protect: IDs that
 *   _other_ generators, live or dead, issued above this one's mark, until the generator with the
 *   highest mark reserves again. Tested with two generators of step 10: A issued 1..10, B 11..20, the
 *   server lost everything; A reserved first and issued 11..20 again (B, reserving next, found the
 *   counter at its own mark and went on at 21). Had B reserved first, nothing would repeat. IDs of
 *   processes that are gone are never protected. `rollbackMargin` jumps that far past the mark: set it
 *   above what all generators together reserve in the window you may lose (with `everysec`, a few
 *   seconds of `segments × step`). Near the top of the range the raise stops at 2^63-1: the counter
 *   stays valid and the reservation fails with `"overflow"`, never handing out IDs inside the margin.
 *   After a full loss the safe repair is by hand: set each counter above the largest ID stored
 *   anywhere (`HSET kvid order <max id + margin>`) before restarting services, or let the `floor`
 *   option do it for each generator (see _Server settings_). Without `guard`, a rollback shows as
 *   `"rollback"` errors until the counter passes the mark by itself. A rollback also makes the
 *   generator read the server's durability again (it may have restarted with other settings).
 * - **What is reported, and what cannot be**: a reservation abandoned at its timeout is still read
 *   when its reply comes; if it found the counter below the mark (a command the client held in its
 *   offline queue while the server restarted empty, then sent), that is counted and emitted like any
 *   rollback. What no generator can see: an abandoned command whose reply never arrives (the
 *   connection dropped after the server applied it) and that raised a lost counter, and a loss while
 *   no generator of that counter is alive (the `floor` option covers that one for the IDs your data
 *   holds). After a restart without persistence, compare `HGET kvid <name>` with the `high` of each
 *   live generator. A server restarted (or replaced) between two reservations with no command in
 *   flight is not noticed as a reconnect: its durability is read again at the next failure or
 *   rollback, and by every new generator.
 *
 * ### Reading `stats()` and events
 *
 * `stats()` returns plain data (strings, numbers, booleans; `DailyId` nests the day's in `counter`),
 * so it can go to a metrics pipeline or `Response.json()` as is:
 *
 * | field                   | read it as                                                                                                                     |
 * | ----------------------- | ------------------------------------------------------------------------------------------------------------------------------ |
 * | `step`                  | IDs per reservation now; pinned at `maxStep` under load means segments last less than `segmentDuration`                        |
 * | `remaining`             | IDs buffered: what a crash of this process would skip                                                                          |
 * | `segments`              | reservations done; its rate is this generator's load on the server                                                             |
 * | `stalls`                | calls that had to wait for a round trip; rising at a steady rate: a slow server (`lastFetchMs`)                                |
 * | `failures`, `lastError` | reservations that failed or timed out, and why (`{ code, message }`); `lastError` clears on success                            |
 * | `lastFetchMs`           | round-trip time of the last reservation                                                                                        |
 * | `high`                  | the highest ID reserved, a decimal string (exact; `ORDER_ID.high` is the bigint); below `HGET kvid <name>` by what others took |
 * | `rollbacks`             | times the counter was found below `high`: the server lost data. Alert on any                                                   |
 * | `reserving`             | a reservation is in flight                                                                                                     |
 * | `durability`            | `{ mode, durable, problems, settings }` as last read from the server: `problems` name the fix; alert on `durable: false`        |
 * | `ttlRemovals`           | times a reservation found a TTL on the hash and removed it (`"expiry"` events): find what sets it                              |
 *
 * A `"rollback"` event's `detail` is `{ floor, last }`: the counter was raised to `floor` (plus the
 * margin) and this reservation ended at `last`. IDs from `floor + 1` up may repeat ones that other
 * processes issued before the loss: log them, and check the stores that keep these IDs.
 *
 * ```ts ignore
 * import { createClient } from "npm:redis@5";
 * import { fromNodeRedis, KvId } from "@kvid/core";
 *
 * const ORDER_ID = new KvId("order", { redis: fromNodeRedis(await createClient().connect()) });
 * ORDER_ID.addEventListener("rollback", (e) => {
 *   const { floor, last } = e.detail; // RollbackDetail
 *   console.error(`kvid "order" went back; raised to ${floor}, reserved up to ${last}`);
 * });
 * const timer = setInterval(() => console.log(JSON.stringify(ORDER_ID.stats())), 10_000);
 * Deno.addSignalListener("SIGTERM", () => clearInterval(timer));
 * ```
 *
 * @example Declare at module scope, connect on first use
 * ```ts ignore
 * import { configure, KvId } from "@kvid/core";
 * import { connect } from "jsr:@db/redis";
 *
 * configure({ redis: () => connect({ hostname: "127.0.0.1", port: 6379 }) });
 * export const ORDER_ID = new KvId("order");
 *
 * const id = await ORDER_ID.next(); // 1, 2, 3, ... one round trip per segment
 * ```
 *
 * @module
 */

// Installs the resolver of the `redis` option and configure()'s default: the engine itself names
// no store (src/contract/store_source.ts).
import "./src/stores/redis/redis_option.ts";

export {
  type BunRedisLike,
  fromBunRedis,
  fromIoredis,
  fromNodeRedis,
  type IoredisLike,
  type NodeRedisLike,
} from "./src/stores/redis/adapters.ts";
export { configure, type KvIdDefaults } from "./src/stores/redis/configure.ts";
export { shutdown } from "./src/contract/shutdown.ts";
export { DailyId, type DailyIdConstructor } from "./src/daily/daily.ts";
export type {
  DailyCleanupDetail,
  DailyIdFormat,
  DailyIdOptions,
  DailyIdStats,
  DailyRollbackDetail,
  DailySerial,
} from "./src/daily/daily_options.ts";
export {
  KvIdError,
  type KvIdErrorCode,
  type KvIdErrorOptions,
  type KvIdErrorReason,
} from "./src/contract/errors.ts";
export { KvId, type KvIdConstructor } from "./src/engine/kvid.ts";
export type {
  DurabilityReport,
  ExpiryDetail,
  KvIdErrorSummary,
  KvIdOptions,
  KvIdStats,
  RollbackDetail,
} from "./src/engine/kvid_options.ts";
export type { DurabilityMode } from "./src/contract/durability.ts";
export type { StepRule } from "./src/engine/step.ts";
export type { Codec } from "./src/codec/codec.ts";
export type { RedisClient, RedisSource } from "./src/contract/redis_client.ts";
// Store authors: Store, Reservation, ReserveOptions, IdRange, InterleavedStore are in
// "@kvid/core/store"; the Deno KV backend is "@kvid/core/deno-kv"; public forms of IDs (fixed
// width, radix 36/62, keyed FF1 encryption) are "@kvid/core/codec".

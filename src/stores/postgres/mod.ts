/**
 * The PostgreSQL store: the segment engine of `@kvid/core` on a table of your PostgreSQL, through
 * the driver you already use, `npm:pg` (a `Pool` or `Client`) or `npm:postgres` (postgres.js),
 * passed as is. No Redis needed; the core takes no dependency (the store speaks to the client
 * through a structural interface).
 *
 * ```ts ignore
 * import pg from "npm:pg";
 * import { KvId } from "@kvid/core";
 * import { PostgresStore } from "@kvid/core/postgres";
 *
 * const pool = new pg.Pool({ connectionString: Deno.env.get("DATABASE_URL") });
 * pool.on("error", () => {}); // an idle client lost: unheard, pg would crash the process
 * export const ORDER_ID = new KvId("order", { store: new PostgresStore(pool) });
 * console.log(await ORDER_ID.next()); // 1, 2, 3, ...
 * await ORDER_ID.close(); // at exit: the unused rest of the range goes back, then the pool
 * await pool.end();
 * ```
 *
 * postgres.js: `new PostgresStore(postgres(url))`. The client stays yours to end.
 *
 * ## The table
 *
 * One row per counter; created on first use (`CREATE TABLE IF NOT EXISTS`) unless
 * `createTable: false`. Only on first use: a table dropped under running generators is a `"config"`
 * error, never silently made again (that would restart every counter at 1; a table restored or
 * recreated by hand is raised above each live generator's IDs by the guard).
 * {@linkcode PostgresStore.tableSql} prints it for a migration:
 *
 * ```sql
 * CREATE TABLE IF NOT EXISTS kvid_counters (
 *   hash_key text NOT NULL,          -- the generator's key: "kvid", "kvid:daily:order"
 *   name text NOT NULL,              -- the generator's name: "order", or a day "20261201"
 *   value bigint NOT NULL DEFAULT 0, -- the last ID reserved (a new name starts at 1)
 *   step bigint,                     -- the step its processes last used (rememberStep)
 *   layout text,                     -- set when a member of interleaved stores; else NULL
 *   modified timestamptz NOT NULL DEFAULT now(),
 *   PRIMARY KEY (hash_key, name)
 * )
 * ```
 *
 * `layout` is written by an interleaving store on each member (its counter then counts block
 * cycles): recorded in the reservation's own statement on first use, checked on every one; a
 * counter with a layout is refused by a single-store generator, one with another layout or with a
 * single store's value by a member, all as `"config"`; give-back and day cleanup leave it alone.
 *
 * The user needs `SELECT, INSERT, UPDATE, DELETE` on the table, and `CREATE` on its schema only to
 * create it (PostgreSQL 15 no longer grants `CREATE` on `public` to every user):
 *
 * ```sql
 * GRANT SELECT, INSERT, UPDATE, DELETE ON kvid_counters TO app;
 * ```
 *
 * Names and keys are at most 255 characters, without NUL (refused as `"config"`). The `bigint`
 * column holds no non-integer and nothing past 2^63-1, so hand edits cannot make the counter
 * unreadable (a table made by hand with another type for `value` or `step` is refused as `"config"`
 * on first use); a negative value (kvid never writes one) is refused as `"reply"` and left alone.
 *
 * ## A reservation
 *
 * One statement, a row lock held for that statement alone, its result the exact new end:
 *
 * ```sql
 * UPDATE kvid_counters SET value = value + $step, modified = now()
 * WHERE hash_key = $1 AND name = $2 AND value >= $floor RETURNING value::text
 * ```
 *
 * Reply V means IDs V-step+1..V, as `HINCRBY` on Redis. Read as text, never a float: exact to
 * 2^63-1; past it the database refuses (`bigint out of range`) and the call fails `"overflow"`.
 * A new counter, or one below the generator's high-water mark (the rollback guard), takes a
 * second statement, `INSERT ... ON CONFLICT DO UPDATE ... WHERE value < $floor`, that creates or
 * raises it (`raised: true`, a `"rollback"` event). Under READ COMMITTED each `UPDATE` waits for
 * the row and adds to the latest committed value, so any number of processes on one counter never
 * share an ID (tested with 8 processes through both drivers, and a `kill -9` of the server
 * mid-run). `close()` gives the unused tail back with a compare-and-set (`UPDATE ... WHERE value
 * = $end`).
 *
 * Why a row lock and not seed 003's optimistic version column (`SELECT value, version`, then
 * `UPDATE ... WHERE version = $v`, again on a conflict): one round trip instead of two, and no
 * retries: under contention most optimistic attempts lose and go round again, while a row lock
 * only queues. With 8 workers on one counter, bench/sql_bench.ts
 * measures both forms: the row lock does several times the reservations, and most optimistic
 * attempts lose to another worker.
 *
 * ## Guarantees and durability
 *
 * A range is handed out only after its statement committed. It survives a crash when the server
 * says so: {@linkcode PostgresStore.durability} reads `fsync`, `synchronous_commit`,
 * `full_page_writes` and whether the table is `UNLOGGED`, and names the fix for each that loses
 * commits (`synchronous_commit = off` loses the last moments of commits on a crash; a role or a
 * session can set it, and the store reads it in its own session). A generator reads it before its
 * first reservation and after a reconnect; with `durability: "strict"` (the default) it refuses a
 * server with a problem as `"config"` naming the fix, and `"best-effort"` accepts the loss. A
 * read-only standby (or `default_transaction_read_only`) refuses writes: `"unavailable"`, retried
 * until the caller's `timeout`, so a promoted standby is served as soon as it is writable. A
 * standby promoted after asynchronous replication may lack the last commits: live generators raise
 * the counter past their IDs (the guard), but a new process could repeat an ID; use synchronous
 * replication (`synchronous_standby_names` with `synchronous_commit = on` or `remote_apply`) where
 * failover must not lose a reservation: tested with a hot standby promoted after a `kill -9` of the
 * primary, generators on a postgres.js client given both hosts with
 * `target_session_attrs: "read-write"` serving on, and no ID repeated, by them or by a generator
 * started after the failover.
 *
 * | the server says                                                          | code            |
 * | ------------------------------------------------------------------------ | --------------- |
 * | serialization failure, deadlock, lock or statement timeout, read-only, shutting down, too many connections | `"unavailable"` (retried) |
 * | a connection refused, reset or lost                                      | `"connection"` (retried) |
 * | wrong password or user, no such database, missing table with `createTable: false`, permission denied, other columns | `"config"` (at once) |
 * | the counter would pass 2^63-1                                            | `"overflow"`    |
 *
 * A transaction of someone else's that holds a counter's row (a `BEGIN` and an `UPDATE` left open
 * by hand) makes its reservations wait: callers still fail at their `timeout`, but the statements
 * queue in the server. Bound them for the store's user, e.g.
 * `ALTER ROLE app SET lock_timeout = '5s'`: a lock timeout is `"unavailable"`, retried.
 *
 * The generators' `replicas` and `waitAof` options (Redis `WAIT`, `WAITAOF`) do not apply to a
 * SQL store and are ignored: a commit is already flushed, and the database's own replication
 * settings decide (synchronous replication above).
 *
 * ## Daily serials
 *
 * `new DailyId("order", { store })` keeps a row per day (`hash_key` `"kvid:daily:order"`, `name`
 * `yyyymmdd`). Its cleanup (`keepDays`, `cleanup()`) deletes a day only when it is old by both the
 * process's clock and the database's (`clock_timestamp()`, {@linkcode PostgresStore.now}): a
 * process whose clock runs ahead cannot delete today's counter.
 *
 * ## Costs
 *
 * One reservation is a commit, so its round trip is the server's commit latency (a log flush).
 * It is paid once per segment, in the background: `next()` per ID costs the same on every store,
 * because a segment is served from memory and the next one is reserved before it runs out.
 * bench/sql_bench.ts measures both beside Redis; figures in bench/RESULTS.md.
 *
 * @module
 */

export {
  type PgQueryable,
  type PostgresClient,
  type PostgresJsSql,
  PostgresStore,
  type PostgresStoreOptions,
} from "./postgres_store.ts";
export type * from "../sql/entry_types.ts";

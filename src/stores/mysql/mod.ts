/**
 * The MySQL and MariaDB store: the segment engine of `@kvid/core` on an InnoDB table, the layout
 * Meituan Leaf and Didi TinyID made common, through a `npm:mysql2/promise` pool passed as is (a
 * callback pool as `pool.promise()`). No Redis needed; the core takes no dependency (the store
 * speaks to the pool through a structural interface).
 *
 * ```ts ignore
 * import mysql from "npm:mysql2/promise";
 * import { KvId } from "@kvid/core";
 * import { MySqlStore } from "@kvid/core/mysql";
 *
 * const pool = mysql.createPool(Deno.env.get("MYSQL_URL")!); // mysql://app:...@host/db
 * export const ORDER_ID = new KvId("order", { store: new MySqlStore(pool) });
 * console.log(await ORDER_ID.next()); // 1, 2, 3, ...
 * await ORDER_ID.close(); // at exit: the unused rest of the range goes back, then the pool
 * await pool.end();
 * ```
 *
 * No pool option is needed for exactness: every number is read as text (`CAST(... AS CHAR)`) or
 * from the statement's `insertId`, which mysql2 gives as a string past 2^53. The pool stays yours
 * to end.
 *
 * ## The table
 *
 * One row per counter; created on first use (`CREATE TABLE IF NOT EXISTS`) unless
 * `createTable: false`. Only on first use: a table dropped under running generators is a `"config"`
 * error, never silently made again (that would restart every counter at 1; a table restored or
 * recreated by hand is raised above each live generator's IDs by the guard).
 * {@linkcode MySqlStore.tableSql} prints it for a migration:
 *
 * ```sql
 * CREATE TABLE IF NOT EXISTS kvid_counters (
 *   hash_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, -- "kvid", ...
 *   name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, -- "order"
 *   value BIGINT NOT NULL DEFAULT 0,  -- the last ID reserved (a new name starts at 1)
 *   step BIGINT NULL,                 -- the step its processes last used (rememberStep)
 *   layout VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, -- a member's layout
 *   modified DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), -- UTC, kvid's writes
 *   PRIMARY KEY (hash_key, name)
 * ) ENGINE=InnoDB
 * ```
 *
 * `layout` is written by an interleaving store on each member (its counter then counts block
 * cycles): recorded in the reservation's own statement on first use, checked on every one; a
 * counter with a layout is refused by a single-store generator, one with another layout or with a
 * single store's value by a member, all as `"config"`; give-back and day cleanup leave it alone.
 *
 * `utf8mb4_bin`: `"Order"` and `"order"` are two counters. Names and keys are at most 255
 * characters, without NUL (refused as `"config"`, never truncated). The user needs
 * `SELECT, INSERT, UPDATE, DELETE` on the table, and `CREATE` only to create it:
 *
 * ```sql
 * GRANT SELECT, INSERT, UPDATE, DELETE ON mydb.kvid_counters TO 'app'@'%';
 * ```
 *
 * The `BIGINT` column holds no non-integer and nothing past 2^63-1 (strict mode refuses it; a
 * non-strict one stores 2^63-1, and the next reservation fails `"overflow"`), so hand edits cannot
 * make the counter unreadable (a table made by hand with another type for `value` or `step`, on
 * which MySQL would add as a double, is refused as `"config"` on first use); a negative value (kvid
 * never writes one) is refused as `"reply"` and left alone.
 *
 * ## A reservation
 *
 * One statement, a row lock held for that statement alone, its result the exact new end:
 *
 * ```sql
 * UPDATE kvid_counters SET value = LAST_INSERT_ID(value + CAST(? AS SIGNED)), modified = ...
 * WHERE hash_key = ? AND name = ? AND value >= CAST(? AS SIGNED)
 * ```
 *
 * Its `insertId` is the new value V: IDs V-step+1..V, as `HINCRBY` on Redis. Numbers go in as
 * text and are `CAST` in SQL (MySQL adds and compares a quoted number as a double); past 2^63-1
 * the server refuses (`BIGINT value is out of range`) and the call fails `"overflow"`. A new
 * counter, or one below the generator's high-water mark (the rollback guard), takes a second
 * statement, `INSERT ... ON DUPLICATE KEY UPDATE`, that creates or raises it (`raised: true`, a
 * `"rollback"` event). InnoDB locks the row for each statement, so any number of processes on one
 * counter never share an ID (tested with 8 processes and a `kill -9` of the server mid-run).
 * `close()` gives the unused tail back with a compare-and-set (`UPDATE ... WHERE value = end`).
 *
 * Why a row lock and not TinyID's optimistic version column (`SELECT`, then
 * `UPDATE ... WHERE version = v`, again on a conflict): one round trip instead of two, and no
 * retries: under contention most optimistic attempts lose and go round again, while a row lock
 * only queues. With 8 workers on one counter, bench/sql_bench.ts
 * measures both forms: the row lock does several times the reservations, and most optimistic
 * attempts lose to another worker.
 *
 * ## Guarantees and durability
 *
 * A range is handed out only after its statement committed (autocommit). It survives a crash when
 * the server says so: {@linkcode MySqlStore.durability} reads `innodb_flush_log_at_trx_commit` (1
 * is durable; 0 loses about the last second on a crash of the server, 2 on a crash of the machine),
 * `sync_binlog` when the binary log is on (below 1, recovery can roll back commits the binary log
 * lost), `innodb_doublewrite`, and the table's engine (anything but InnoDB is not crash-safe), and
 * names the fix for each. A generator reads it before its first reservation and after a reconnect;
 * with `durability: "strict"` (the default) it refuses a server with a problem as `"config"` naming
 * the fix, and `"best-effort"` accepts the loss. A read-only server (a replica, `read_only`)
 * refuses writes: `"unavailable"`, retried until the caller's `timeout`. A replica promoted after
 * asynchronous replication may lack the last commits: live generators raise the counter past their
 * IDs (the guard), but a new process could repeat an ID; use semi-synchronous replication (or
 * Galera) where failover must not lose a reservation.
 *
 * | the server says                                                        | code            |
 * | ---------------------------------------------------------------------- | --------------- |
 * | deadlock, lock wait timeout, read-only, too many connections, shutdown | `"unavailable"` (retried) |
 * | a connection refused, reset or lost                                    | `"connection"` (retried) |
 * | access denied (password or user), unknown database, missing table with `createTable: false`, a command denied, other columns | `"config"` (at once) |
 * | the counter would pass 2^63-1                                          | `"overflow"`    |
 *
 * A transaction of someone else's that holds a counter's row makes its reservations wait, up to
 * `innodb_lock_wait_timeout` (50 s by default; then `"unavailable"`, retried); callers still fail
 * at their `timeout`. Lower it for the store's sessions where that matters.
 *
 * The generators' `replicas` and `waitAof` options (Redis `WAIT`, `WAITAOF`) do not apply to a
 * SQL store and are ignored: a commit is already flushed, and the database's own replication
 * settings decide (semi-synchronous replication above).
 *
 * ## Daily serials
 *
 * `new DailyId("order", { store })` keeps a row per day (`name` `yyyymmdd`). Its cleanup deletes a
 * day only when it is old by both the process's clock and the database's (`UNIX_TIMESTAMP()`,
 * {@linkcode MySqlStore.now}).
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

export { type MySqlQueryable, MySqlStore, type MySqlStoreOptions } from "./mysql_store.ts";
export type * from "../sql/entry_types.ts";

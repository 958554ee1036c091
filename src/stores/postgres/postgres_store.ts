/**
 * {@linkcode PostgresStore}: the counters of @kvid/core in a PostgreSQL table, through the
 * client of `npm:pg` or `npm:postgres` (postgres.js), passed as is.
 *
 * @module
 */

import type { Store } from "../../contract/store.ts";
import { type SqlDialect, SqlTableStore } from "../sql/sql_table_store.ts";
import { checkTable, DEFAULT_TABLE, epochMs } from "../sql/table_values.ts";
import { postgresError, sqlState } from "./postgres_errors.ts";

/**
 * A node-postgres (`npm:pg`) `Pool`, `Client` or `PoolClient`: anything with
 * `query(text, values)` resolving to `{ rows }`. Passed as is.
 *
 * @example The shape, by hand
 * ```ts
 * import type { PgQueryable } from "@kvid/core/postgres";
 * import assert from "node:assert/strict";
 *
 * const fake: PgQueryable = { query: () => Promise.resolve({ rows: [{ value: "10" }] }) };
 * assert.ok((await fake.query("SELECT 1", [])).rows[0].value === "10");
 * ```
 */
export interface PgQueryable {
  /** Run one parameterized statement (`$1`, `$2`, ...); the store sends every value as text. */
  query(text: string, values: (string | null)[]): Promise<{ rows: Record<string, unknown>[] }>;
}

/**
 * A postgres.js (`npm:postgres`) `sql` instance: anything with `unsafe(text, values)` resolving
 * to the rows. Passed as is.
 *
 * @example The shape, by hand
 * ```ts
 * import type { PostgresJsSql } from "@kvid/core/postgres";
 * import assert from "node:assert/strict";
 *
 * const fake: PostgresJsSql = { unsafe: () => Promise.resolve([{ value: "10" }]) };
 * assert.ok((await fake.unsafe("SELECT 1", []))[0].value === "10");
 * ```
 */
export interface PostgresJsSql {
  /** Run one parameterized statement (`$1`, `$2`, ...); the store sends every value as text. */
  unsafe(
    text: string,
    values: (string | null)[],
  ): PromiseLike<ArrayLike<Record<string, unknown>>>;
}

/**
 * The PostgreSQL clients {@linkcode PostgresStore} takes: a `pg` pool or client
 * ({@linkcode PgQueryable}) or a postgres.js `sql` ({@linkcode PostgresJsSql}).
 *
 * @example Either driver
 * ```ts ignore
 * import pg from "npm:pg";
 * import postgres from "npm:postgres";
 * import { PostgresStore } from "@kvid/core/postgres";
 *
 * const a = new PostgresStore(new pg.Pool({ connectionString: Deno.env.get("DATABASE_URL") }));
 * const b = new PostgresStore(postgres(Deno.env.get("DATABASE_URL")!));
 * ```
 */
export type PostgresClient = PgQueryable | PostgresJsSql;

/**
 * Options of {@linkcode PostgresStore}.
 *
 * @example A table of its own name, created by a migration
 * ```ts
 * import type { PostgresStoreOptions } from "@kvid/core/postgres";
 * import assert from "node:assert/strict";
 *
 * const options: PostgresStoreOptions = { table: "ids.counters", createTable: false };
 * assert.ok(options.createTable === false);
 * ```
 */
export interface PostgresStoreOptions {
  /**
   * The counter table, optionally schema-qualified (`"ids.counters"`): a plain identifier.
   *
   * @default {"kvid_counters"}
   */
  table?: string;
  /**
   * Create the table (`CREATE TABLE IF NOT EXISTS`) on first use when it is missing. False for a
   * user without DDL rights: a missing table is then a `"config"` error naming the DDL
   * ({@linkcode PostgresStore.tableSql}).
   *
   * @default {true}
   */
  createTable?: boolean;
}

/**
 * A {@linkcode Store} on a PostgreSQL table: pass it as the `store` option of `KvId` or
 * `DailyId`. One row per counter; a reservation is one `UPDATE ... RETURNING` (a row lock held
 * for that statement alone), exact to 2^63-1; a counter that is missing or below the floor takes
 * a second statement, `INSERT ... ON CONFLICT DO UPDATE ... WHERE value < floor`. See the module
 * doc for the table, the permissions and the guarantees; the methods are
 * {@linkcode SqlTableStore}'s.
 *
 * The client stays yours: the store never closes it.
 *
 * @example With `npm:pg`
 * ```ts ignore
 * import pg from "npm:pg";
 * import { KvId } from "@kvid/core";
 * import { PostgresStore } from "@kvid/core/postgres";
 *
 * const pool = new pg.Pool({ connectionString: Deno.env.get("DATABASE_URL") });
 * export const ORDER_ID = new KvId("order", { store: new PostgresStore(pool) });
 * console.log(await ORDER_ID.next()); // 1, 2, 3, ...
 * await ORDER_ID.close();
 * await pool.end();
 * ```
 */
export class PostgresStore extends SqlTableStore implements Store {
  /**
   * Make a store on `client`; nothing is sent until the first reservation.
   *
   * @param client A `pg` pool or client, or a postgres.js `sql`.
   * @param options See {@linkcode PostgresStoreOptions}.
   */
  constructor(client: PostgresClient, options: PostgresStoreOptions = {}) {
    super("PostgresStore", options, (table) => postgresDialect(runner(client), table));
  }

  /**
   * The DDL of the counter table, for a migration or a DBA: what the store runs on first use
   * with `createTable` on.
   *
   * @example
   * ```ts
   * import { PostgresStore } from "@kvid/core/postgres";
   * import assert from "node:assert/strict";
   *
   * assert.ok(PostgresStore.tableSql().startsWith("CREATE TABLE IF NOT EXISTS kvid_counters ("));
   * ```
   *
   * @param table The table's name.
   * @returns One `CREATE TABLE IF NOT EXISTS` statement.
   */
  static tableSql(table: string = DEFAULT_TABLE): string {
    checkTable("PostgresStore.tableSql", table);
    return `CREATE TABLE IF NOT EXISTS ${table} (
  hash_key text NOT NULL,
  name text NOT NULL,
  value bigint NOT NULL DEFAULT 0,
  step bigint,
  layout text,
  modified timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (hash_key, name)
)`;
  }
}

/** One statement through either driver: the rows. */
type Run = (text: string, values: (string | null)[]) => Promise<Record<string, unknown>[]>;

/** The client's way to run a statement: postgres.js `unsafe`, or `pg`'s `query`. */
function runner(client: PostgresClient): Run {
  if (typeof (client as Partial<PostgresJsSql> | null)?.unsafe === "function") {
    const sql = client as PostgresJsSql;
    return async (text, values) => Array.from(await sql.unsafe(text, values));
  }
  if (typeof (client as Partial<PgQueryable> | null)?.query === "function") {
    const pg = client as PgQueryable;
    return async (text, values) => (await pg.query(text, values)).rows;
  }
  throw new TypeError(
    "PostgresStore takes a client of npm:pg (Pool, Client: query(text, values)) or npm:postgres (sql: unsafe(text, values))",
  );
}

// What durability() reads, as PostgreSQL names it (the table's persistence, whether a standby).
const SETTINGS = [
  "fsync",
  "synchronous_commit",
  "full_page_writes",
  "table_persistence",
  "in_recovery",
];

/** PostgreSQL's statements on `t`: every value sent as text and cast in SQL. */
function postgresDialect(run: Run, t: string): SqlDialect {
  return {
    error: (err, key, field) => postgresError(err, key, field, t),
    isMissingTable: (err) => sqlState(err) === "42P01",
    probe: async () => void await run(`SELECT 1 FROM ${t} LIMIT 0`, []),
    // Two processes creating it at once: the loser's error (the type or table exists) is
    // followed by SqlTableStore's one retry, a no-op once the winner has committed.
    createTable: async () => void await run(PostgresStore.tableSql(t), []),
    columns: () =>
      run(
        `SELECT attname::text AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`,
        [t],
      ),
    async increment(key, field, count, floor, layout) {
      const rows = await run(
        `UPDATE ${t} SET value = value + $3::bigint, modified = now()
WHERE hash_key = $1 AND name = $2 AND value >= $4::bigint AND layout IS NOT DISTINCT FROM $5::text
RETURNING value::text AS value`,
        [key, field, String(count), String(floor), layout],
      );
      return rows[0]?.value;
    },
    async insertOrRaise(key, field, start, floor, layout) {
      const rows = await run(
        `INSERT INTO ${t} AS c (hash_key, name, value, layout, modified)
VALUES ($1, $2, $3::bigint, $5::text, now())
ON CONFLICT (hash_key, name) DO UPDATE
SET value = excluded.value, layout = excluded.layout, modified = now()
WHERE (c.layout IS NOT DISTINCT FROM $5::text AND c.value >= 0 AND c.value < $4::bigint)
  OR ($5::text IS NOT NULL AND c.layout IS NULL AND c.value = 0)
RETURNING value::text AS value`,
        [key, field, String(start), String(floor), layout],
      );
      return rows[0]?.value;
    },
    async find(key, field) {
      const rows = await run(
        `SELECT value::text AS value, layout FROM ${t} WHERE hash_key = $1 AND name = $2`,
        [key, field],
      );
      return rows[0];
    },
    async counters(key, names) {
      const only = names === undefined
        ? ""
        : ` AND name IN (${names.map((_, i) => `$${i + 2}`).join(", ")})`;
      return await run(
        `SELECT name, value::text AS value, layout FROM ${t}
WHERE hash_key = $1 AND (value > 0 OR layout IS NOT NULL)${only}`,
        [key, ...names ?? []],
      );
    },
    async release(key, field, to, from) {
      const rows = await run(
        `UPDATE ${t} SET value = $3::bigint, modified = now()
WHERE hash_key = $1 AND name = $2 AND value = $4::bigint AND layout IS NULL RETURNING 1 AS released`,
        [key, field, String(to), String(from)],
      );
      return rows.length === 1;
    },
    async loadStep(key, field) {
      const rows = await run(
        `SELECT step::text AS step FROM ${t} WHERE hash_key = $1 AND name = $2`,
        [key, field],
      );
      return rows[0]?.step;
    },
    async saveStep(key, field, step) {
      await run(
        `INSERT INTO ${t} AS c (hash_key, name, value, step) VALUES ($1, $2, 0, $3::bigint)
ON CONFLICT (hash_key, name) DO UPDATE SET step = excluded.step`,
        [key, field, String(step)],
      );
    },
    async deleteDaysBefore(key, before) {
      const rows = await run(
        `WITH gone AS (DELETE FROM ${t}
WHERE hash_key = $1 AND name ~ '^[0-9]{8}$' AND name < $2 AND layout IS NULL RETURNING 1)
SELECT count(*)::text AS n FROM gone`,
        [key, before],
      );
      return Number(rows[0]?.n ?? 0);
    },
    async now() {
      const rows = await run(
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS ms",
        [],
      );
      return epochMs(rows[0]?.ms, "clock_timestamp()");
    },
    async settings() {
      const rows = await run(
        `SELECT current_setting('fsync') AS fsync,
current_setting('synchronous_commit') AS synchronous_commit,
current_setting('full_page_writes') AS full_page_writes,
pg_is_in_recovery()::text AS in_recovery,
(SELECT CASE relpersistence WHEN 'u' THEN 'unlogged' WHEN 't' THEN 'temporary' ELSE 'logged' END
 FROM pg_class WHERE oid = to_regclass($1)) AS table_persistence`,
        [t],
      );
      const row = rows[0] ?? {};
      return Object.fromEntries(SETTINGS.map((name) => [name, row[name]]));
    },
    problems(settings) {
      const problems: string[] = [];
      if (settings.fsync !== "on") {
        problems.push(
          `fsync is ${settings.fsync}: a crash of the machine can lose or corrupt committed reservations; set fsync = on`,
        );
      }
      if (settings.synchronous_commit === "off" || settings.synchronous_commit === "unknown") {
        problems.push(
          `synchronous_commit is ${settings.synchronous_commit}: a crash of the server loses the reservations of its last moments (up to 3 x wal_writer_delay); set synchronous_commit = on (or ALTER ROLE <user> SET synchronous_commit = on)`,
        );
      }
      if (settings.full_page_writes !== "on") {
        problems.push(
          `full_page_writes is ${settings.full_page_writes}: a crash of the machine can leave torn pages in the table; set full_page_writes = on`,
        );
      }
      const persistence = settings.table_persistence;
      if (persistence === "unlogged" || persistence === "temporary") {
        problems.push(
          `the table ${t} is ${persistence}: a crash empties it; ALTER TABLE ${t} SET LOGGED`,
        );
      }
      return problems;
    },
  };
}

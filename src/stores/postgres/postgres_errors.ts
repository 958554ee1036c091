/**
 * How a PostgreSQL failure becomes a {@linkcode KvIdError}: the server's SQLSTATE (both `pg` and
 * postgres.js put it in `code`) mapped to what the engine does with it: retry a transient state,
 * fail fast on a setup mistake.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import { sqlCounter } from "../sql/table_values.ts";
import { errorMessage, unusableAddress } from "../../contract/store_errors.ts";

/** The SQLSTATE of a server error, or undefined for a client-side or network failure. */
export function sqlState(err: unknown): string | undefined {
  if (err === null || typeof err !== "object") return undefined;
  const { code, severity } = err as { code?: unknown; severity?: unknown };
  // A server error carries a severity (ERROR, FATAL, PANIC); Node's own errors (ECONNRESET) and
  // the drivers' (postgres.js CONNECTION_CLOSED) have a code but no severity.
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && severity !== undefined
    ? code
    : undefined;
}

/**
 * Map a `pg` or postgres.js error to a {@linkcode KvIdError} naming the counter.
 *
 * Transient (`"unavailable"`, retried until the caller's deadline): a serialization failure
 * (40001), a deadlock (40P01), a lock or statement timeout (55P03, 57014), a read-only standby
 * or transaction (25006), a server shutting down or starting (57P01-57P03), insufficient
 * resources (class 53). `"connection"`: a connection exception (class 08) or any failure without
 * a SQLSTATE (a reset, a refused connection, a closed pool). `"config"`: authentication (class
 * 28), a missing database or schema (3D000, 3F000), a missing table (42P01), a permission
 * denied (42501), columns that are not kvid's (42703, 42804, 42883). `"overflow"`: a value past
 * `bigint` (22003).
 */
export function postgresError(
  err: unknown,
  key: string,
  field: string,
  table: string,
): KvIdError {
  if (err instanceof KvIdError) return err;
  const where = { ...sqlCounter(table, key, field), cause: err };
  const message = errorMessage(err);
  const state = sqlState(err);
  if (state === undefined) {
    if (unusableAddress(err)) {
      return new KvIdError("config", `PostgreSQL's address is not usable: ${message}`, where);
    }
    return new KvIdError("connection", `PostgreSQL could not be reached: ${message}`, where);
  }
  const said = `${message} (SQLSTATE ${state})`;
  if (state === "22003") {
    return new KvIdError("overflow", `the counter would pass 2^63-1: ${said}`, where);
  }
  if (
    ["40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03"].includes(state) ||
    state.startsWith("53")
  ) {
    return new KvIdError("unavailable", `PostgreSQL cannot serve for now: ${said}`, where);
  }
  if (state === "25006") {
    return new KvIdError(
      "unavailable",
      `PostgreSQL refused the write as read-only (a standby, or default_transaction_read_only): waiting for a writable primary: ${said}`,
      where,
    );
  }
  if (state.startsWith("08")) {
    return new KvIdError("connection", `the connection to PostgreSQL failed: ${said}`, where);
  }
  if (state.startsWith("28")) {
    return new KvIdError(
      "config",
      `PostgreSQL refused the login (user or password): ${said}`,
      { ...where, reason: "auth" },
    );
  }
  if (state === "3D000" || state === "3F000") {
    return new KvIdError("config", `the database or schema does not exist: ${said}`, where);
  }
  if (state === "42P01") {
    return new KvIdError(
      "config",
      `the table ${table} does not exist: create it (PostgresStore.tableSql() prints the DDL) or let the store create it (createTable: true, with CREATE rights): ${said}`,
      where,
    );
  }
  if (state === "42501") {
    return new KvIdError(
      "config",
      `the PostgreSQL user may not do what kvid needs (SELECT, INSERT, UPDATE, DELETE on ${table}; CREATE on its schema to create it): ${said}`,
      where,
    );
  }
  // Undefined column, datatype mismatch, no operator for the column's type (its type altered).
  if (state === "42703" || state === "42804" || state === "42883") {
    return new KvIdError(
      "config",
      `the table ${table} does not have kvid's columns (PostgresStore.tableSql() prints them): ${said}`,
      where,
    );
  }
  return new KvIdError("reply", `PostgreSQL refused the statement: ${said}`, where);
}

/**
 * How a MySQL or MariaDB failure becomes a {@linkcode KvIdError}: the server's error number
 * (`errno` on a `npm:mysql2` error) mapped to what the engine does with it: retry a transient
 * state, fail fast on a setup mistake.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import { sqlCounter } from "../sql/table_values.ts";
import { errorMessage, unusableAddress } from "../../contract/store_errors.ts";

/** The server's error number, or undefined for a client-side or network failure. */
export function mysqlErrno(err: unknown): number | undefined {
  if (err === null || typeof err !== "object") return undefined;
  const { errno, sqlState } = err as { errno?: unknown; sqlState?: unknown };
  // Server errors carry a SQLSTATE; Node's own (ECONNRESET) have a negative errno and none.
  return typeof errno === "number" && errno > 0 && typeof sqlState === "string" ? errno : undefined;
}

// Deadlock (1213), lock wait timeout (1205), a statement killed by max_statement_time (1969,
// MariaDB; 3024 MySQL), --read-only or --super-read-only (1290), a read-only transaction (1792),
// too many connections (1040, 1203), a server shutting down (1053), a Galera node not ready
// (1047: WSREP has not yet prepared node for application use).
const TRANSIENT = new Set([1213, 1205, 1969, 3024, 1290, 1792, 1836, 1040, 1203, 1053, 1047]);
// Lost or killed connections: the server is (or was) gone.
const CONNECTION = new Set([1927, 2002, 2003, 2006, 2013, 2055]);

/**
 * Map a `mysql2` error to a {@linkcode KvIdError} naming the counter.
 *
 * Transient (`"unavailable"`): a deadlock, a lock wait timeout, a read-only server (a replica,
 * `read_only`), too many connections, a shutdown. `"connection"`: a lost connection, or any
 * failure without a server error number. `"config"`: a wrong password or user (1045, 1698), an
 * unknown database (1049), a missing table (1146), a permission denied (1142, 1143, 1044,
 * 1227), columns that are not kvid's (1054), a name too long (1406). `"overflow"`: a value past
 * `BIGINT` (1690).
 */
export function mysqlError(err: unknown, key: string, field: string, table: string): KvIdError {
  if (err instanceof KvIdError) return err;
  const where = { ...sqlCounter(table, key, field), cause: err };
  const message = errorMessage(err);
  const errno = mysqlErrno(err);
  if (errno === undefined) {
    if (unusableAddress(err)) {
      return new KvIdError("config", `MySQL's address is not usable: ${message}`, where);
    }
    return new KvIdError("connection", `MySQL could not be reached: ${message}`, where);
  }
  const said = `${message} (errno ${errno})`;
  if (errno === 1690) {
    return new KvIdError("overflow", `the counter would pass 2^63-1: ${said}`, where);
  }
  if (errno === 1290 || errno === 1792 || errno === 1836) {
    return new KvIdError(
      "unavailable",
      `MySQL refused the write as read-only (a replica, or read_only): waiting for a writable primary: ${said}`,
      where,
    );
  }
  if (TRANSIENT.has(errno)) {
    return new KvIdError("unavailable", `MySQL cannot serve for now: ${said}`, where);
  }
  if (CONNECTION.has(errno)) {
    return new KvIdError("connection", `the connection to MySQL failed: ${said}`, where);
  }
  if (errno === 1045 || errno === 1698) {
    return new KvIdError("config", `MySQL refused the login (user or password): ${said}`, {
      ...where,
      reason: "auth",
    });
  }
  if (errno === 1049) {
    return new KvIdError("config", `the database does not exist: ${said}`, where);
  }
  if (errno === 1146) {
    return new KvIdError(
      "config",
      `the table ${table} does not exist: create it (MySqlStore.tableSql() prints the DDL) or let the store create it (createTable: true, with CREATE rights): ${said}`,
      where,
    );
  }
  if ([1142, 1143, 1044, 1227].includes(errno)) {
    return new KvIdError(
      "config",
      `the MySQL user may not do what kvid needs (SELECT, INSERT, UPDATE, DELETE on ${table}; CREATE to create it): ${said}`,
      where,
    );
  }
  if (errno === 1054 || errno === 1406 || errno === 1366) {
    return new KvIdError(
      "config",
      `the table ${table} does not have kvid's columns, or a name does not fit them (MySqlStore.tableSql() prints them): ${said}`,
      where,
    );
  }
  return new KvIdError("reply", `MySQL refused the statement: ${said}`, where);
}

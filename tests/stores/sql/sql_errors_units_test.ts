/**
 * Unit tests of the SQL stores' error classification (src/stores/postgres/postgres_errors.ts,
 * src/stores/mysql/mysql_errors.ts): every SQLSTATE or errno the stores name, mapped to the code
 * the engine acts on (transient states retried, permanent ones failing fast). The errors the
 * servers really send are staged in tests/stores/postgres/postgres_store_test.ts and tests/stores/mysql/mysql_store_test.ts;
 * this pins the whole table. Starts no server.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../../src/contract/errors.ts";
import { postgresError, sqlState } from "../../../src/stores/postgres/postgres_errors.ts";
import { mysqlErrno, mysqlError } from "../../../src/stores/mysql/mysql_errors.ts";

const pg = (code: string, severity: string | undefined = "ERROR") =>
  Object.assign(new Error(`pg said ${code}`), { code, severity });
const pgNoSeverity = (code: string) => Object.assign(new Error(`pg said ${code}`), { code });

Deno.test("postgresError: each SQLSTATE to what the engine does with it", () => {
  const table: [string, string, string?][] = [
    ["22003", "overflow"],
    ["40001", "unavailable"],
    ["40P01", "unavailable"],
    ["55P03", "unavailable"],
    ["57014", "unavailable"],
    ["57P01", "unavailable"],
    ["57P02", "unavailable"],
    ["57P03", "unavailable"],
    ["53000", "unavailable"],
    ["53300", "unavailable"],
    ["25006", "unavailable"],
    ["08000", "connection"],
    ["08006", "connection"],
    ["08P01", "connection"],
    ["28000", "config", "auth"],
    ["28P01", "config", "auth"],
    ["3D000", "config"],
    ["3F000", "config"],
    ["42P01", "config"],
    ["42501", "config"],
    ["42703", "config"],
    ["42804", "config"],
    ["42883", "config"],
    ["23505", "reply"],
    ["42601", "reply"],
    ["P0001", "reply"],
  ];
  for (const [state, code, reason] of table) {
    const err = postgresError(pg(state), "kvid", "order", "kvid_counters");
    assert.equal(err.code, code, state);
    assert.equal(err.reason, reason ?? "", state);
    assert.equal(err.key, "kvid");
    assert.equal(err.field, "order");
    assert.match(err.message, new RegExp(`pg said ${state} \\(SQLSTATE ${state}\\)`));
  }
  assert.match(postgresError(pg("42P01"), "k", "f", "ids.t").message, /the table ids\.t /);
  assert.match(postgresError(pg("42501"), "k", "f", "ids.t").message, /on ids\.t;/);
  assert.match(postgresError(pg("42703"), "k", "f", "ids.t").message, /the table ids\.t does/);
});

Deno.test("postgresError: no SQLSTATE (a driver's or the network's error) is a connection failure", () => {
  for (
    const err of [
      Object.assign(new Error("reset"), { code: "ECONNRESET" }),
      Object.assign(new Error("closed"), { code: "CONNECTION_CLOSED" }),
      pgNoSeverity("08006"), // a SQLSTATE-shaped code without a severity: not the server's
      pg("08p01"),
      pg("0800"),
      new Error("gone"),
      "a string",
      null,
    ]
  ) {
    const got = postgresError(err, "kvid", "order", "t");
    assert.equal(got.code, "connection", String(err));
    assert.match(got.message, /PostgreSQL could not be reached/);
  }
  const own = new KvIdError("timeout", "mine", { key: "kvid", field: "order" });
  assert.equal(postgresError(own, "kvid", "order", "t"), own, "a KvIdError passes through");
  assert.equal(sqlState(pg("40001")), "40001");
  assert.equal(sqlState(pgNoSeverity("40001")), undefined);
  assert.equal(sqlState({ code: 40001, severity: "ERROR" }), undefined);
  assert.equal(sqlState(undefined), undefined);
});

const my = (errno: number, sqlState = "HY000") =>
  Object.assign(new Error(`mysql said ${errno}`), { errno, sqlState });
const myNoState = (errno: number) => Object.assign(new Error(`mysql said ${errno}`), { errno });

Deno.test("mysqlError: each errno to what the engine does with it", () => {
  const table: [number, string, string?][] = [
    [1690, "overflow"],
    [1290, "unavailable"],
    [1792, "unavailable"],
    [1836, "unavailable"],
    [1213, "unavailable"],
    [1205, "unavailable"],
    [1969, "unavailable"],
    [3024, "unavailable"],
    [1040, "unavailable"],
    [1203, "unavailable"],
    [1053, "unavailable"],
    [1047, "unavailable"],
    [1927, "connection"],
    [2002, "connection"],
    [2003, "connection"],
    [2006, "connection"],
    [2013, "connection"],
    [2055, "connection"],
    [1045, "config", "auth"],
    [1698, "config", "auth"],
    [1049, "config"],
    [1146, "config"],
    [1142, "config"],
    [1143, "config"],
    [1044, "config"],
    [1227, "config"],
    [1054, "config"],
    [1406, "config"],
    [1366, "config"],
    [1062, "reply"],
    [1064, "reply"],
  ];
  for (const [errno, code, reason] of table) {
    const err = mysqlError(my(errno), "kvid", "order", "kvid_counters");
    assert.equal(err.code, code, String(errno));
    assert.equal(err.reason, reason ?? "", String(errno));
    assert.equal(err.field, "order");
    assert.match(err.message, new RegExp(`mysql said ${errno} \\(errno ${errno}\\)`));
  }
  for (const errno of [1290, 1792, 1836]) {
    assert.match(mysqlError(my(errno), "k", "f", "t").message, /read-only/, String(errno));
  }
  assert.match(mysqlError(my(1146), "k", "f", "ids.t").message, /the table ids\.t /);
  assert.match(mysqlError(my(1142), "k", "f", "ids.t").message, /on ids\.t;/);
  assert.match(mysqlError(my(1054), "k", "f", "ids.t").message, /the table ids\.t does/);
});

Deno.test("mysqlError: no errno with a SQLSTATE (the network's, the driver's) is a connection failure", () => {
  for (
    const err of [
      Object.assign(new Error("reset"), { errno: -104, code: "ECONNRESET" }),
      my(0),
      myNoState(1213),
      { errno: "1213", sqlState: "40001" },
      new Error("gone"),
      null,
    ]
  ) {
    const got = mysqlError(err, "kvid", "order", "t");
    assert.equal(got.code, "connection", String(err));
    assert.match(got.message, /MySQL could not be reached/);
  }
  const own = new KvIdError("timeout", "mine", { key: "kvid", field: "order" });
  assert.equal(mysqlError(own, "kvid", "order", "t"), own);
  assert.equal(mysqlErrno(my(1213)), 1213);
  assert.equal(mysqlErrno(myNoState(1213)), undefined);
  assert.equal(mysqlErrno(my(-1)), undefined);
  assert.equal(mysqlErrno(undefined), undefined);
});

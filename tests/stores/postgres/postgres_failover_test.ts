/**
 * A PostgreSQL standby promoted under live generators: a real hot standby refuses reservations
 * as `"unavailable"` (read-only), and with synchronous replication a `kill -9` of the primary and
 * the promotion of the standby lose no reservation: the generators (through a postgres.js client
 * given both hosts, `target_session_attrs: "read-write"`) serve on, and neither they nor a new
 * generator started after the failover repeat an ID.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import postgres from "postgres";
import pg from "pg";
import { KvId } from "../../../mod.ts";
import { PostgresStore } from "../../../src/stores/postgres/mod.ts";
import { rejectsWith } from "../../support/assert.ts";
import { startPostgres, startPostgresStandby } from "../../support/sql_servers.ts";

const PLAIN = { floor: 0n, raiseTo: 0n, guard: true, exact: true };

Deno.test("PostgreSQL failover: a standby is unavailable, then promoted under live generators, 0 duplicates", async () => {
  await using primary = await startPostgres();
  await using standby = await startPostgresStandby(primary);
  const admin = new pg.Client({ connectionString: primary.url });
  await admin.connect();
  try {
    // The table first, then synchronous replication: a commit returns once the standby has it.
    await new PostgresStore(admin).ensureTable();
    await admin.query("ALTER SYSTEM SET synchronous_standby_names = '*'");
    await admin.query("SELECT pg_reload_conf()");
    const deadline = performance.now() + 30_000;
    while (
      (await admin.query("SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'")).rows
        .length === 0
    ) {
      assert.ok(performance.now() < deadline, "the standby never became synchronous");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await admin.end();
  }

  // A real read-only standby: transient, retried, nothing written.
  const direct = postgres(standby.url, { max: 1, onnotice: () => {} });
  try {
    await rejectsWith(
      new PostgresStore(direct).reserve("kvid", "order", 1, PLAIN),
      "unavailable",
      /read-only/,
    );
  } finally {
    await direct.end({ timeout: 1 });
  }

  const both =
    `postgres://${primary.user}:${primary.password}@${primary.host}:${primary.port},${standby.host}:${standby.port}/${primary.database}`;
  const sql = postgres(both, {
    max: 2,
    onnotice: () => {},
    target_session_attrs: "read-write",
    connect_timeout: 2,
  });
  try {
    const store = new PostgresStore(sql);
    const options = { store, minStep: 5, maxStep: 5, timeout: 60_000 };
    const a = new KvId("order", options);
    const b = new KvId("order", options);
    const ids: number[] = [];
    for (let i = 0; i < 60; i++) ids.push(await a.next(), await b.next());
    await primary.kill();
    await standby.promote();
    for (let i = 0; i < 60; i++) ids.push(await a.next(), await b.next());
    await a.close();
    await b.close();
    // A generator that starts after the failover, with no memory of the old primary.
    await using late = new KvId("order", { store, minStep: 5, maxStep: 5 });
    for (let i = 0; i < 30; i++) ids.push(await late.next());
    assert.equal(new Set(ids).size, ids.length, "no ID repeated across the failover");
  } finally {
    await sql.end({ timeout: 1 });
  }
});

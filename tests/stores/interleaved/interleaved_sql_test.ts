/**
 * Seed 003's outer and inner steps on several database instances: one interleaved set over a
 * Redis server, a PostgreSQL and a MariaDB (real servers this file starts). The layout on every
 * member, and generators on their own pools while the PostgreSQL is killed (`kill -9`) mid-run
 * and started again: the set keeps serving, no ID twice, the database used again once back.
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import pg from "pg";
import mysql from "mysql2/promise";
import { KvId } from "../../../mod.ts";
import { InterleavedStore, RedisStore, type Store } from "../../../src/stores/mod.ts";
import { PostgresStore } from "../../../src/stores/postgres/mod.ts";
import { MySqlStore } from "../../../src/stores/mysql/mod.ts";
import { type OpenClient, openClient } from "../../support/redis_clients.ts";
import { command, startServer } from "../../support/redis_server.ts";
import { startMariaDb, startPostgres } from "../../support/sql_servers.ts";
import { assertIncreasing } from "../../support/assert.ts";

// Servers the test can kill: not with one external server.
const ignore = Deno.env.get("KVID_TEST_URL") !== undefined;
const N = 3;
const residue = (id: number, block: number) => Math.floor((id - 1) / block) % N;

Deno.test({
  name: "interleaved over Redis, PostgreSQL and MariaDB: PostgreSQL killed mid-run, no duplicate",
  ignore,
}, async () => {
  await using redis = await startServer({ persistence: "aof" });
  await using postgres = await startPostgres();
  await using mariadb = await startMariaDb();
  const BLOCK = 10;
  const GENERATORS = 3;
  const EACH = 2_000; // IDs per generator in each phase
  const ends: (() => Promise<unknown>)[] = [];
  const redisClients: OpenClient[] = [];
  try {
    const members = async (): Promise<Store[]> => {
      const r = await openClient("ioredis", redis.url);
      redisClients.push(r);
      const pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
      pool.on("error", () => {}); // an idle client lost with the killed server
      ends.push(() => pool.end());
      const my = mysql.createPool({
        uri: mariadb.url,
        connectionLimit: 2,
        supportBigNumbers: true,
        bigNumberStrings: true,
      });
      ends.push(() => my.end());
      return [new RedisStore(r.redis), new PostgresStore(pool), new MySqlStore(my)];
    };
    const generators: KvId[] = [];
    for (let g = 0; g < GENERATORS; g++) {
      const store = new InterleavedStore(await members(), { block: BLOCK, timeout: 5_000 });
      generators.push(new KvId("seed3", { store, minStep: BLOCK, maxStep: 4 * BLOCK }));
    }
    const taken: number[][] = generators.map(() => []);
    let stop = false;
    const deadline = performance.now() + 90_000;
    const work = generators.map(async (id, g) => {
      while (!stop) {
        if (performance.now() > deadline) throw new Error(`generator ${g} ran past 90 s`);
        taken[g].push(...await id.nextBatch(50));
      }
    });
    const until = async (done: () => boolean) => {
      while (!done()) {
        if (performance.now() > deadline) assert.fail("the generators did not get there");
        await Promise.race([...work, new Promise((r) => setTimeout(r, 20))]);
      }
    };
    const counts = () => taken.map((t) => t.length);
    await until(() => taken.every((t) => t.length >= EACH));
    await postgres.kill(); // mid-run: reservations are in flight on every member
    const killedAt = counts();
    await until(() => taken.every((t, g) => t.length >= killedAt[g] + EACH));
    const dead = counts();
    await postgres.start();
    // Until the PostgreSQL member serves again (it is retried after a backoff).
    await until(() => taken.some((t, g) => t.slice(dead[g]).some((x) => residue(x, BLOCK) === 1)));
    stop = true;
    await Promise.all(work);

    for (const [g, ids] of taken.entries()) assertIncreasing(ids, `generator ${g}`);
    const sorted = Float64Array.from(taken.flat()).sort();
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i] === sorted[i - 1]) assert.fail(`duplicate ID ${sorted[i]}`);
    }
    // While it was dead the two others served; skipped: what each generator held or had in
    // flight at the kill (its segment, the next, one reply on the way).
    const held = 4 * 4 * BLOCK;
    const whileDead = taken.flatMap((t, g) => t.slice(killedAt[g] + held, dead[g]));
    const residues = new Set(whileDead.map((x) => residue(x, BLOCK)));
    assert.deepEqual([...residues].sort(), [0, 2], "Redis and MariaDB served while it was dead");
    // Each member holds its own layout next to its counter of block cycles.
    const check = new pg.Pool({ connectionString: postgres.url, max: 1 });
    check.on("error", () => {});
    try {
      const row = (await check.query(
        "SELECT value::text AS value, layout FROM kvid_counters WHERE hash_key = 'kvid' AND name = 'seed3'",
      )).rows[0];
      assert.equal(row.layout, "v1 servers=3 block=10 index=1");
      assert.ok(Number(row.value) > 0);
    } finally {
      await check.end();
    }
    assert.equal(
      await command(redis.url, "HGET", "kvid", "\u0000layout:seed3"),
      "v1 servers=3 block=10 index=0",
    );
    console.log(
      `${sorted.length} IDs from ${GENERATORS} generators on Redis, PostgreSQL and MariaDB, ` +
        `distinct; PostgreSQL killed after ${killedAt.join(",")} and back after ${dead.join(",")}`,
    );
    await Promise.all(generators.map((id) => id.close()));
  } finally {
    for (const end of ends) await end().catch(() => {});
    await Promise.all(redisClients.map((c) => c.close()));
  }
});

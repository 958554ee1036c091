/**
 * The shared Store spec on interleaving over SQL stores: an `InterleavedStore` of a PostgreSQL
 * (`npm:pg`) and a MariaDB (`npm:mysql2`) this file starts, each a member recording its layout
 * in its row. (Each SQL store alone runs the spec in its own test file.)
 */

import "./deadline.ts"; // a time limit on every test of this file
import mysql from "mysql2/promise";
import pg from "pg";
import { InterleavedStore } from "../src/stores/interleaved/interleaved_store.ts";
import { MySqlStore } from "../src/stores/mysql/mod.ts";
import { PostgresStore } from "../src/stores/postgres/mod.ts";
import { closedPort, freshTable } from "./sql_store_cases.ts";
import { startMariaDb, startPostgres } from "./sql_servers.ts";
import { runStoreSpec } from "./stores/store_spec.ts";

Deno.test("store spec: InterleavedStore over a PostgreSQL and a MariaDB", async (t) => {
  await using postgres = await startPostgres();
  await using mariadb = await startMariaDb();
  const ends: (() => Promise<unknown>)[] = [];
  // A member on each server, or (for the unreachable case) on a port nothing listens on.
  const members = (pgPort: number, myPort: number) => {
    const pool = new pg.Pool({
      host: postgres.host,
      port: pgPort,
      user: postgres.user,
      password: postgres.password,
      database: postgres.database,
      max: 4,
    });
    pool.on("error", () => {}); // an idle client lost: unheard, pg would crash the process
    const my = mysql.createPool({
      host: mariadb.host,
      port: myPort,
      user: mariadb.user,
      password: mariadb.password,
      database: mariadb.database,
      connectionLimit: 4,
    });
    ends.push(() => pool.end(), () => my.end());
    const table = freshTable();
    return new InterleavedStore(
      [new PostgresStore(pool, { table }), new MySqlStore(my, { table })],
      {
        block: 4,
      },
    );
  };
  try {
    await runStoreSpec(t, {
      store: members(postgres.port, mariadb.port),
      contiguous: false,
      durable: true,
      unreachable: () =>
        Promise.resolve({
          store: members(closedPort(), closedPort()),
          [Symbol.asyncDispose]: () => Promise.resolve(),
        }),
    });
  } finally {
    await Promise.all(ends.map((end) => end()));
  }
});

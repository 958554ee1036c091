/**
 * A producer process for the SQL process tests: takes IDs from one generator on a PostgreSQL or
 * MySQL store and writes them to a file, one decimal a line. After each chunk it prints
 * `written <n>` so the parent can act mid-run (kill the database, restart it); at the end
 * `done <n> failures=<reservations that failed>`.
 *
 * Usage: `deno run -A sql_worker.ts --driver=pg|postgres.js|mysql2 --url=... --name=N
 * --count=600 --out=FILE [--min-step=3] [--max-step=10] [--flush=25]`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import pg from "pg";
import postgres from "postgres";
import mysql from "mysql2/promise";
import { KvId } from "../../mod.ts";
import { PostgresStore } from "../../src/stores/postgres/mod.ts";
import { MySqlStore } from "../../src/stores/mysql/mod.ts";
import type { Store } from "../../src/contract/store.ts";

const { values } = parseArgs({
  options: {
    driver: { type: "string" },
    url: { type: "string" },
    name: { type: "string" },
    count: { type: "string", default: "600" },
    out: { type: "string" },
    "min-step": { type: "string", default: "3" },
    "max-step": { type: "string", default: "10" },
    flush: { type: "string", default: "25" },
  },
});
if (!values.driver || !values.url || !values.name || !values.out) {
  throw new Error("sql_worker: --driver, --url, --name and --out are required");
}
const url = values.url;
let store: Store;
let end: () => Promise<unknown>;
if (values.driver === "pg") {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on("error", () => {}); // an idle client cut by the killed server
  store = new PostgresStore(pool);
  end = () => pool.end();
} else if (values.driver === "postgres.js") {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  store = new PostgresStore(sql);
  end = () => sql.end({ timeout: 1 });
} else {
  const pool = mysql.createPool({ uri: url, connectionLimit: 2 });
  store = new MySqlStore(pool);
  end = () => pool.end();
}

const count = Number(values.count);
const flush = Number(values.flush);
// The timeout rides out the database's restart.
const id = new KvId(values.name, {
  store,
  minStep: Number(values["min-step"]),
  maxStep: Number(values["max-step"]),
  timeout: 60_000,
});
const file = await Deno.open(values.out, { write: true, create: true, truncate: true });
const encoder = new TextEncoder();
let written = 0;
let chunk: number[] = [];
while (written + chunk.length < count) {
  chunk.push(await id.next());
  if (chunk.length === flush || written + chunk.length === count) {
    const bytes = encoder.encode(chunk.join("\n") + "\n");
    for (let off = 0; off < bytes.length;) off += await file.write(bytes.subarray(off));
    written += chunk.length;
    chunk = [];
    await Deno.stdout.write(encoder.encode(`written ${written}\n`));
  }
}
file.close();
const { failures } = id.stats();
await id.close();
await end();
await Deno.stdout.write(encoder.encode(`done ${written} failures=${failures}\n`));

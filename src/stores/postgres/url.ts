/**
 * `postgres://` and `postgresql://` URLs (the service's `KVID_STORE_URL`, the CLI's `--url`): a
 * {@linkcode PostgresStore} on an `npm:pg` pool, both imported only when such a URL is used.
 *
 * @module
 */

import { importDriver } from "../drivers.ts";
import type { StoreOpener } from "../store_opener.ts";
import type { PgQueryable } from "./postgres_store.ts";

/**
 * What of `npm:pg` the opener uses. Its own type, not `typeof import("pg")`: a module whose
 * types reach into npm makes `deno doc` and the build resolve every npm package of the config.
 */
interface PgModule {
  default: {
    Pool: new (config: { connectionString: string; connectionTimeoutMillis: number }) =>
      & PgQueryable
      & { on(event: "error", listener: () => void): unknown; end(): Promise<void> };
  };
}

/** How a PostgreSQL URL opens: a `pg.Pool` on it, and the store on the pool. */
export const POSTGRES_URL: StoreOpener<"postgres"> = {
  kind: "postgres",
  schemes: ["postgres:", "postgresql:"],
  also: { counters: true },
  async open(url, { timeout }) {
    const [{ default: pg }, { PostgresStore }] = await Promise.all([
      importDriver<PgModule>("pg", "a postgres:// URL"),
      import("./postgres_store.ts"),
    ]);
    const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: timeout });
    // An idle client's error (a restarted server) is emitted on the pool: unheard, pg would
    // crash the process; the next query reconnects.
    pool.on("error", () => {});
    return {
      store: new PostgresStore(pool),
      ping: async () => void await pool.query("SELECT 1", []),
      close: () => pool.end(),
    };
  },
};

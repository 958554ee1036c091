/**
 * `mysql://` URLs (the service's `KVID_STORE_URL`, the CLI's `--url`): a {@linkcode MySqlStore}
 * on an `npm:mysql2` pool, both imported only when such a URL is used.
 *
 * @module
 */

import { importDriver } from "../drivers.ts";
import type { StoreOpener } from "../store_opener.ts";
import type { MySqlQueryable } from "./mysql_store.ts";

/**
 * What of `npm:mysql2/promise` the opener uses (its own type: see the PostgreSQL opener's).
 */
interface MySqlModule {
  default: {
    createPool(options: {
      uri: string;
      connectTimeout: number;
      supportBigNumbers: boolean;
      bigNumberStrings: boolean;
    }): MySqlQueryable & { end(): Promise<void> };
  };
}

/** How a MySQL or MariaDB URL opens: a `mysql2` pool reading big integers as strings. */
export const MYSQL_URL: StoreOpener<"mysql"> = {
  kind: "mysql",
  schemes: ["mysql:"],
  also: { counters: true },
  async open(url, { timeout }) {
    const [{ default: mysql }, { MySqlStore }] = await Promise.all([
      importDriver<MySqlModule>("mysql2", "a mysql:// URL", "/promise"),
      import("./mysql_store.ts"),
    ]);
    // Integers as strings: a BIGINT above 2^53 is read exactly.
    const pool = mysql.createPool({
      uri: url,
      connectTimeout: timeout,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    return {
      store: new MySqlStore(pool),
      ping: async () => void await pool.query("SELECT 1", []),
      close: () => pool.end(),
    };
  },
};

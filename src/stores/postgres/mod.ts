/**
 * PostgreSQL store (draft doc, completed below).
 *
 * @module
 */

export {
  type PgQueryable,
  type PostgresClient,
  type PostgresJsSql,
  PostgresStore,
  type PostgresStoreOptions,
} from "./postgres_store.ts";
export type {
  IdRange,
  Reservation,
  ReserveOptions,
  Store,
  StoreDurability,
} from "../../store_contract.ts";

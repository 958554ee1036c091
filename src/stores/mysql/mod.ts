/**
 * MySQL store (draft doc, completed below).
 *
 * @module
 */

export { type MySqlQueryable, MySqlStore, type MySqlStoreOptions } from "./mysql_store.ts";
export type {
  IdRange,
  Reservation,
  ReserveOptions,
  Store,
  StoreDurability,
} from "../../store_contract.ts";

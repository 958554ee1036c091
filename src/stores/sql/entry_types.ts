/**
 * The types each SQL store's entry point (`@kvid/core/postgres`, `@kvid/core/mysql`) re-exports
 * beside its store: the Store contract's, and {@linkcode SqlTableStore}, whose methods the stores
 * share.
 *
 * @module
 */

export type { SqlTableStore } from "./sql_table_store.ts";
export type {
  DurabilityOptions,
  IdRange,
  Reservation,
  ReserveOptions,
  Store,
  StoreDurability,
} from "../../contract/store.ts";

/**
 * How a {@linkcode DenoKvStore}'s failures to open its database become a `KvIdError`, and
 * which failures of a write are a locked SQLite file, retried like a conflict.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import type { DenoKvSource } from "./deno_kv_options.ts";

/**
 * Why the database could not be opened. A setup mistake that waiting cannot fix (no
 * `--unstable-kv`, a directory that does not exist, a missing permission) is `"config"`, said at
 * once; anything else may heal and is retried as `"connection"`.
 */
export function openError(
  cause: unknown,
  source: DenoKvSource | undefined,
  at: { key: string; field: string; where?: string },
): KvIdError {
  const where = { ...at, cause };
  if (typeof Deno.openKv !== "function") {
    return new KvIdError(
      "config",
      'Deno.openKv is not available: run with --unstable-kv (or "unstable": ["kv"] in deno.json)',
      where,
    );
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  const path = typeof source === "string" ? ` ${JSON.stringify(source)}` : "";
  if (
    cause instanceof Deno.errors.NotFound || /unable to open database file/i.test(message)
  ) {
    return new KvIdError(
      "config",
      `could not open the Deno KV database${path}: does its directory exist? (${message})`,
      where,
    );
  }
  if (
    cause instanceof Deno.errors.PermissionDenied ||
    (Deno.errors.NotCapable !== undefined && cause instanceof Deno.errors.NotCapable)
  ) {
    return new KvIdError(
      "config",
      `could not open the Deno KV database${path}: ${message}`,
      where,
    );
  }
  return new KvIdError(
    "connection",
    `could not open the Deno KV database${path}: ${message}`,
    where,
  );
}

/** SQLite's "database is locked"/"busy": a local file shared by processes, under write load. */
export function isBusy(err: unknown): boolean {
  return err instanceof Error && /database is (locked|busy)/i.test(err.message);
}

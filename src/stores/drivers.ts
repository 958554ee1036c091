/**
 * The npm drivers a store URL needs, loaded when that URL is first used: a Deno KV service never
 * fetches node-redis, a Redis one never fetches `pg` or `mysql2`. The specifier is built at run
 * time, so neither `deno run` nor `deno bundle` sees it in the module graph and fetches it ahead.
 *
 * | package  | range (deno.json's) | for                                   |
 * | -------- | ------------------- | ------------------------------------- |
 * | `redis`  | `^5.8.0`            | `redis://`, `rediss://` (node-redis)  |
 * | `pg`     | `^8.23.1`           | `postgres://`, `postgresql://`        |
 * | `mysql2` | `^3.24.6`           | `mysql://` (MySQL, MariaDB)           |
 *
 * On Deno the import is `npm:<package>@<range>`; on Node and Bun, the package name, installed by
 * the application (`npm install pg`).
 *
 * @module
 */

import { KvIdError } from "../contract/errors.ts";

/** The drivers by npm package, with the version range deno.json's imports give them. */
export const DRIVERS = {
  redis: "^5.8.0",
  pg: "^8.23.1",
  mysql2: "^3.24.6",
} as const;

/** A driver's npm package name. */
export type DriverName = keyof typeof DRIVERS;

/**
 * The specifier of a driver on this runtime: `npm:pg@^8.23.1/…` on Deno, `pg/…` elsewhere.
 *
 * @example
 * ```ts
 * import { driverSpecifier } from "./drivers.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(driverSpecifier("mysql2", "/promise"), "npm:mysql2@^3.24.6/promise");
 * ```
 *
 * @param name The package.
 * @param subpath A subpath export with its leading slash (`"/promise"`).
 * @returns The specifier.
 */
export function driverSpecifier(name: DriverName, subpath = ""): string {
  return "Deno" in globalThis ? `npm:${name}@${DRIVERS[name]}${subpath}` : `${name}${subpath}`;
}

/**
 * Import a driver now; a `"config"` {@linkcode KvIdError} naming the package when it cannot be
 * loaded (on Node or Bun: not installed), never retried.
 *
 * @param name The package.
 * @param what What needs it, for the message (`"a postgres:// URL"`).
 * @param subpath A subpath export with its leading slash.
 * @returns The module.
 */
export async function importDriver<T>(name: DriverName, what: string, subpath = ""): Promise<T> {
  const specifier = driverSpecifier(name, subpath);
  try {
    return await import(specifier) as T;
  } catch (err) {
    const reason = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw new KvIdError(
      "config",
      `${what} needs the npm package ${name}@${DRIVERS[name]}, which could not be loaded ` +
        `(${reason})${"Deno" in globalThis ? "" : `: npm install ${name}`}`,
      { cause: err },
    );
  }
}

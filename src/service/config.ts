/**
 * The service's options checked once, when the handler is made, with the defaults of
 * {@linkcode SERVICE_DEFAULTS} filled in: a mistake refuses to start instead of failing the first
 * request. The store comes from the `store` option, or from `redis` through the contract's store
 * source (the resolver the Redis store module installs), so this file names no store.
 *
 * @module
 */

import type { Codec } from "../codec/codec.ts";
import { checkStoreSource, storeFromSource } from "../runtime/store_source.ts";
import type { AnyStore, Store } from "../contract/store.ts";
import type { DurabilityMode } from "../contract/durability.ts";
import { DailyId } from "../daily/daily.ts";
import { KvId } from "../engine/kvid.ts";
import { parseGrants, TokenAuth } from "./auth.ts";
import { NAME_OPTION_KEYS, type NameOptions, nameOptionsFor } from "./generators.ts";
import { SERVICE_DEFAULTS, type ServiceOptions } from "./options.ts";

/** {@linkcode ServiceOptions} checked, defaults filled in: what the parts of the handler read. */
export interface ServiceConfig {
  /** The store every generator and segment endpoint uses. */
  readonly store: AnyStore;
  /** How the store is named on the status page and in the log. */
  readonly storeLabel: string;
  /** The readiness probe given, or undefined for the default (see `readiness.ts`). */
  readonly ready: (() => Promise<unknown>) | undefined;
  /** The tokens; undefined with `auth: "none"`. */
  readonly auth: TokenAuth | undefined;
  /** Per-name generator options, checked. */
  readonly names: Record<string, NameOptions> | undefined;
  readonly timeZone: string;
  readonly maxGenerators: number;
  readonly idleMs: number;
  readonly maxSegment: number;
  readonly timeout: number;
  readonly durability: DurabilityMode;
  /** `""` or a prefix like `"/ids"`. */
  readonly basePath: string;
  readonly codecs: ReadonlyMap<string, Codec<string>> | undefined;
  readonly metrics: (() => string[]) | undefined;
  readonly log: (line: string) => void;
}

const BASE_PATH = /^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*$/;

/**
 * Check `options` and fill in the defaults.
 *
 * @throws {TypeError} A bad option, neither or both of `redis` and `store`, no `tokens` unless
 *   `auth: "none"`.
 * @throws {RangeError} A count that is not a positive integer, an unknown time zone.
 */
export function serviceConfig(options: ServiceOptions): ServiceConfig {
  if (options === null || typeof options !== "object") {
    throw new TypeError("createHandler() takes an options object");
  }
  const log = options.log ?? ((line: string) => console.error(line));
  if ((options.redis === undefined) === (options.store === undefined)) {
    throw new TypeError("createHandler() needs exactly one of the options redis and store");
  }
  const auth = tokenAuth(options, log);
  const codecs = options.codecs;
  if (codecs !== undefined && !(codecs instanceof Map)) {
    throw new TypeError("createHandler(): option codecs must be a Map of name -> Codec");
  }
  const timeZone = options.timeZone ?? SERVICE_DEFAULTS.timeZone;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
  } catch {
    throw new RangeError(`kvid service: unknown time zone ${JSON.stringify(timeZone)}`);
  }
  const durability = options.durability ?? SERVICE_DEFAULTS.durability;
  if (durability !== "strict" && durability !== "best-effort") {
    throw new TypeError(`createHandler(): option durability must be "strict" or "best-effort"`);
  }
  const timeout = positive("timeout", options.timeout, SERVICE_DEFAULTS.timeout);
  const basePath = options.basePath ?? SERVICE_DEFAULTS.basePath;
  if (typeof basePath !== "string" || !BASE_PATH.test(basePath)) {
    throw new TypeError(
      `kvid service: basePath must be "" or a path like "/ids" (no trailing slash), got ${
        JSON.stringify(basePath)
      }`,
    );
  }
  let store: Store;
  if (options.store !== undefined) {
    if (typeof options.store?.reserve !== "function") {
      throw new TypeError("createHandler(): option store must have a reserve() method");
    }
    store = options.store;
  } else {
    checkStoreSource("createHandler()", options.redis, { list: false });
    store = storeFromSource(options.redis, {
      who: "createHandler",
      key: "kvid",
      field: "",
      options: { timeout },
    });
  }
  return {
    store,
    storeLabel: options.storeLabel ?? (options.redis !== undefined ? "redis" : "store"),
    ready: options.ready,
    auth,
    names: checkNames(options.names, store),
    timeZone,
    maxGenerators: positive(
      "maxGenerators",
      options.maxGenerators,
      SERVICE_DEFAULTS.maxGenerators,
    ),
    idleMs: positive("idleMs", options.idleMs, SERVICE_DEFAULTS.idleMs),
    maxSegment: positive("maxSegment", options.maxSegment, SERVICE_DEFAULTS.maxSegment),
    timeout,
    durability,
    basePath,
    codecs,
    metrics: options.metrics,
    log,
  };
}

function positive(what: string, v: number | undefined, fallback: number): number {
  v ??= fallback;
  if (!Number.isInteger(v) || v < 1) {
    throw new RangeError(`kvid service: ${what} must be a positive integer, got ${v}`);
  }
  return v;
}

/** The token check of `options.tokens`, or undefined with `auth: "none"` (logged loudly). */
function tokenAuth(options: ServiceOptions, log: (line: string) => void): TokenAuth | undefined {
  const mode = options.auth ?? SERVICE_DEFAULTS.auth;
  if (mode === "none") {
    if (options.tokens !== undefined) {
      throw new TypeError('createHandler(): auth "none" and tokens exclude each other');
    }
    log(
      "kvid service: WARNING: authentication is OFF (KVID_AUTH=none): anyone who can reach " +
        "this service gets IDs and sees its status",
    );
    return undefined;
  }
  if (mode !== "token") {
    throw new TypeError(`createHandler(): option auth must be "token" or "none"`);
  }
  if (options.tokens === undefined) {
    throw new TypeError(
      'kvid service: no tokens (KVID_TOKENS): refusing to start; set auth "none" ' +
        "(KVID_AUTH=none) to run it open on purpose",
    );
  }
  return new TokenAuth(parseGrants(options.tokens));
}

/**
 * Check the per-name options now, not at a name's first request: unknown keys, and what the
 * engine refuses (a generator of each kind is made with them on no store, then dropped).
 */
function checkNames(
  names: Record<string, NameOptions> | undefined,
  store: Store,
): Record<string, NameOptions> | undefined {
  if (names === undefined) return undefined;
  if (names === null || typeof names !== "object" || Array.isArray(names)) {
    throw new TypeError("kvid service: names must be an object of name: options");
  }
  for (const [name, own] of Object.entries(names)) {
    const where = `kvid service: names[${JSON.stringify(name)}]`;
    if (own === null || typeof own !== "object" || Array.isArray(own)) {
      throw new TypeError(`${where} must be an object`);
    }
    for (const key of Object.keys(own)) {
      if (!(NAME_OPTION_KEYS as readonly string[]).includes(key)) {
        throw new TypeError(
          `${where}: unknown option ${key} (known: ${NAME_OPTION_KEYS.join(", ")})`,
        );
      }
    }
    try {
      // Never used, so closing them touches no store.
      void new KvId(name === "*" ? "x" : name, { store, ...nameOptionsFor("ids", own) }).close();
      void new DailyId(name === "*" ? "x" : name, {
        store,
        format: "string",
        ...nameOptionsFor("daily", own),
      }).close();
    } catch (err) {
      throw new TypeError(`${where}: ${err instanceof Error ? err.message : err}`);
    }
  }
  return names;
}

/**
 * The error type of @kvid/core.
 *
 * @module
 */

/**
 * What went wrong, as a stable string to branch on.
 *
 * - `"closed"`: the generator was closed.
 * - `"config"`: a setup mistake waiting cannot fix: no Redis client given or configured, auth
 *   failed, a command not allowed (`NOPERM`) or unknown (renamed), Deno KV without
 *   `--unstable-kv` or its directory, a `clock` returning a non-finite reading, a factory that
 *   failed permanently, a setup that cannot read a counter exactly (a client rounding integers
 *   above 2^53 on a server without scripting) or in its layout, a server that keeps no AOF
 *   while `waitAof` asks it to confirm each reservation is on disk (`appendonly no`, also when
 *   turned off at run time; the reservation's IDs are spent, none served).
 * - `"timeout"`: no ID could be reserved within the `timeout` option (also: a reservation that
 *   `WAIT` or `WAITAOF` did not confirm in time; its IDs are spent).
 * - `"conflict"`: the store's optimistic writes kept losing to other writers (Deno KV); retried.
 * - `"connection"`: the store could not be reached (the cause says why).
 * - `"unavailable"`: the server answered that it cannot serve for now (`LOADING`, `READONLY`,
 *   `MASTERDOWN`, `BUSY`, `TRYAGAIN`, `CLUSTERDOWN`; writes refused for too few replicas
 *   `NOREPLICAS`, out of memory `OOM`, a disk it cannot persist to `MISCONF`), or the store is
 *   known down (`failFast`); retried until the caller's deadline.
 * - `"reply"`: the server answered with an error (wrong type, not an integer, auth, ...).
 * - `"overflow"`: the counter would pass 2^63-1.
 * - `"unsafe"`: in number mode, the next ID would be above `Number.MAX_SAFE_INTEGER`.
 * - `"rollback"`: the stored counter went below IDs this generator already issued.
 * - `"domain"`: an ID outside the domain of a codec (`@kvid/core/codec`), e.g. a counter past
 *   the 10^12 - 1 that 12 decimal digits hold, or a negative number: never wrapped.
 * - `"malformed"`: a public ID that is not of its codec's form: wrong length, a character outside
 *   the alphabet, a missing prefix or suffix, a key identifier no key is known for.
 *
 * @example Map codes to HTTP statuses
 * ```ts
 * import { KvIdError, type KvIdErrorCode } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * // Worth a retry by the client: the store is down or slow, or the process is shutting down.
 * const RETRY: KvIdErrorCode[] = ["timeout", "connection", "unavailable", "conflict", "closed"];
 * const status = (err: unknown) =>
 *   err instanceof KvIdError && RETRY.includes(err.code) ? 503 : 500;
 *
 * const at = { key: "kvid", field: "order" };
 * assert.ok(status(new KvIdError("timeout", "no ID within 5000 ms", at)) === 503);
 * assert.ok(status(new KvIdError("overflow", "the counter would pass 2^63-1", at)) === 500);
 * ```
 */
export type KvIdErrorCode =
  | "closed"
  | "config"
  | "timeout"
  | "conflict"
  | "connection"
  | "unavailable"
  | "reply"
  | "overflow"
  | "unsafe"
  | "rollback"
  | "domain"
  | "malformed";

/**
 * Why, more precisely than the code, for callers that branch on it (never on the message, which
 * is for people and may change): `""` when the code says it all.
 *
 * - `"name-too-long"`: a name within the generator's limits that the store cannot key (Deno KV:
 *   2 KiB keys).
 * - `"auth"`: the server refused the credentials, or a command to this user (`NOAUTH`,
 *   `WRONGPASS`, `NOPERM`; a SQL login): a `"config"` error the CLI reports as exit 3.
 * - `"not-a-hash"`: a `"reply"` error: the counter's key holds a value of another type (Redis
 *   `WRONGTYPE`), the same on every server that holds it.
 * - `"not-a-counter"`: a `"reply"` error: the counter holds something other than a non-negative
 *   integer (Redis: not an integer; Deno KV: not a `Deno.KvU64`).
 * - `"unexpected-range"`: a `"reply"` error: a member of interleaved servers replied a range of
 *   cycles other than the one asked for.
 * - `"not-durable"`: a `"config"` error: the store can lose reservations (no AOF, eviction),
 *   refused under `durability: "strict"`; the message lists the problems and the fix.
 *
 * @example
 * ```ts
 * import { KvIdError, type KvIdErrorReason } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const reason: KvIdErrorReason = "name-too-long";
 * const err = new KvIdError("config", "the KV key is too large", { reason });
 * assert.ok(err.code === "config" && err.reason === "name-too-long");
 * ```
 */
export type KvIdErrorReason =
  | ""
  | "name-too-long"
  | "auth"
  | "not-a-hash"
  | "not-a-counter"
  | "unexpected-range"
  | "not-durable";

/**
 * Options of {@linkcode KvIdError}.
 *
 * @example A custom store reporting a lost connection
 * ```ts
 * import { KvIdError, type KvIdErrorOptions } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const where: KvIdErrorOptions = { key: "kvid", field: "order", cause: new Error("ECONNRESET") };
 * const err = new KvIdError("connection", "the store could not be reached", where);
 * assert.ok(err.key === "kvid" && err.field === "order" && err.cause === where.cause);
 * ```
 */
export interface KvIdErrorOptions {
  /**
   * The hash key of the counter, e.g. `"kvid"`; left out by a codec's errors, which are about a
   * value, not a counter.
   */
  key?: string;
  /** The hash field of the counter: the generator's name; left out with `key`. */
  field?: string;
  /**
   * The counter in its store's own words, appended to the message in parentheses instead of
   * `hash "<key>", field "<field>"` (a store's `describe(key, field)`), e.g.
   * `table "kvid_counters", hash_key "kvid", name "order"`; `""`: the hash words.
   *
   * @default {""}
   */
  where?: string;
  /** The underlying error, if any. */
  cause?: unknown;
  /**
   * Why, more precisely than the code ({@linkcode KvIdErrorReason}).
   *
   * @default {""}
   */
  reason?: KvIdErrorReason;
}

/**
 * A failure to hand out an ID, naming the counter (`key` and `field`) and carrying the
 * underlying error as `cause`. A codec's errors (`"domain"`, `"malformed"`) name the value
 * instead; their `key` and `field` are `""` unless a generator's codec wrapper adds its counter.
 *
 * @example Branch on the code
 * ```ts
 * import { KvIdError } from "@kvid/core";
 * import assert from "node:assert/strict";
 *
 * const err = new KvIdError("timeout", "no ID within 5000 ms", { key: "kvid", field: "order" });
 * assert.ok(err instanceof Error && err.code === "timeout");
 * assert.ok(err.message.includes("kvid"));
 * ```
 */
export class KvIdError extends Error {
  /** What went wrong. */
  readonly code: KvIdErrorCode;
  /** The hash key of the counter; `""` for an error not about a counter (a codec's). */
  readonly key: string;
  /** The hash field of the counter (the generator's name); `""` with `key`. */
  readonly field: string;
  /** Why, more precisely than the code; `""` when the code says it all. */
  readonly reason: KvIdErrorReason;
  /** The counter in its store's words, as the message names it; `""`: the hash words. */
  readonly where: string;

  /**
   * Make an error naming the counter.
   *
   * @param code What went wrong.
   * @param message A human sentence; the counter's key and field, when given, are appended.
   * @param options The counter and the cause.
   */
  constructor(code: KvIdErrorCode, message: string, options: KvIdErrorOptions = {}) {
    const key = options.key ?? "";
    const field = options.field ?? "";
    const where = options.where ?? "";
    super(message + counterLabel(key, field, where), { cause: options.cause });
    this.name = "KvIdError";
    this.code = code;
    this.key = key;
    this.field = field;
    this.reason = options.reason ?? "";
    this.where = where;
  }
}

/**
 * What an error says, without the counter a {@linkcode KvIdError} appends (its cause's reason,
 * for a message that names the counter once), and only its first line.
 */
export function reasonOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const line = text.split("\n")[0];
  if (!(err instanceof KvIdError)) return line;
  const suffix = counterLabel(err.key, err.field, err.where);
  return suffix !== "" && line.endsWith(suffix) ? line.slice(0, -suffix.length) : line;
}

/**
 * Whether an error of `code` may pass by itself, so the call is retried until its deadline
 * (`connection`, `timeout`, `conflict`, `unavailable`); every other code is a mistake waiting
 * cannot fix, or a verdict.
 */
export function isTransient(code: KvIdErrorCode): boolean {
  return code === "connection" || code === "timeout" || code === "conflict" ||
    code === "unavailable";
}

/**
 * What a message appends: the counter in its store's words, else in a hash's, or the hash alone
 * when no counter is concerned.
 */
function counterLabel(key: string, field: string, where: string): string {
  if (where !== "") return ` (${where})`;
  if (key === "" && field === "") return "";
  return field === ""
    ? ` (hash ${JSON.stringify(key)})`
    : ` (hash ${JSON.stringify(key)}, field ${fieldLabel(field)})`;
}

/** A counter's name as a message quotes it: JSON, cut to 80 characters. */
export function fieldLabel(field: string): string {
  const json = JSON.stringify(field);
  return json.length > 80 ? `${json.slice(0, 77)}..."` : json;
}

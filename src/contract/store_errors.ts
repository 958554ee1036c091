/**
 * How a store's failure becomes a {@linkcode KvIdError}: the words of Redis, Kvrocks and the
 * clients mapped to a code the engine acts on (retry a transient state, fail fast on a setup
 * mistake).
 *
 * @module
 */

import { KvIdError } from "./errors.ts";

/** An error's message, or the value as a string. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Server error replies, whatever the client calls them. */
export function isReplyError(err: unknown): boolean {
  for (let p = err; p && typeof p === "object"; p = Object.getPrototypeOf(p)) {
    const name = (p as { constructor?: { name?: string } }).constructor?.name ?? "";
    if (/Reply|SimpleError|BlobError/.test(name)) return true;
  }
  return false;
}

// "hash value is not an integer" (Redis); "not started as an integer", "encounter non-integer
// characters", "out of range of integer type" (Kvrocks).
const NOT_AN_INTEGER =
  /not an integer|not a valid integer|not started as an integer|non-integer characters|out of range/i;

// Transient server states, at the start of the reply or after a prefix (Kvrocks' "ERR ", a
// script's "...: "). Kvrocks: "LOADING kvrocks is restoring the db from backup", "READONLY You
// can't write against a read only slave.", "TRYAGAIN Can't write to slot being migrated ...",
// "CLUSTERDOWN ...". BUSY is a script running past its time limit (not BUSYKEY, BUSYGROUP).
// Writes refused while a condition an operator (or the server) clears holds: "NOREPLICAS Not
// enough good replicas to write." (min-replicas-to-write), "OOM command not allowed when used
// memory > 'maxmemory'." (noeviction at its limit), "MISCONF ... unable to persist to disk"
// (stop-writes-on-bgsave-error after a failed BGSAVE, or a failed AOF write). Retried, not 500.
const TRANSIENT_STATE =
  /(^|ERR |: )(LOADING|READONLY|MASTERDOWN|BUSY|TRYAGAIN|CLUSTERDOWN|NOREPLICAS|OOM|MISCONF)\b/;

// A host name that does not resolve (getaddrinfo ENOTFOUND; Deno's "Name or service not known",
// "No address associated with hostname"), a scheme the client refuses (node-redis: "Invalid
// protocol"), a URL that does not parse.
const UNUSABLE_ADDRESS =
  /\bENOTFOUND\b|Name or service not known|No address associated with hostname|Invalid protocol|Invalid URL/i;

/**
 * Whether a client's failure to connect is permanent: a host that does not resolve, a scheme the
 * client refuses, a URL that does not parse. Waiting cannot fix it: a `"config"` error at once.
 */
export function unusableAddress(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "ENOTFOUND" ||
    UNUSABLE_ADDRESS.test(errorMessage(err));
}

/** Map a client or server error to a {@linkcode KvIdError} naming the counter. */
export function toKvIdError(err: unknown, key: string, field: string): KvIdError {
  if (err instanceof KvIdError) return err;
  const message = errorMessage(err).replace(/^-/, "");
  const where = { key, field, cause: err };
  if (!isReplyError(err)) {
    // An address that names no host, or a URL of a scheme the client does not speak: waiting
    // cannot fix either, so said at once.
    if (unusableAddress(err)) {
      return new KvIdError("config", `the store's address is not usable: ${message}`, where);
    }
    return new KvIdError("connection", `the store could not be reached: ${message}`, where);
  }
  // A server that cannot serve for now (loading its data, a demoted primary or a replica cut
  // off from its primary, a busy script, a cluster slot moving or not covered, too few
  // replicas, out of memory, a disk it cannot persist to): transient.
  if (TRANSIENT_STATE.test(message)) {
    return new KvIdError("unavailable", `the server cannot serve for now: ${message}`, where);
  }
  if (/overflow/i.test(message)) {
    return new KvIdError("overflow", "the counter would pass 2^63-1", where);
  }
  // Kvrocks words some refusals differently and, inside a script, prefixes them
  // ("... @user_script:1: Invalid argument: WRONGTYPE ...").
  if (/(^|: )WRONGTYPE/.test(message)) {
    return new KvIdError("reply", "the key holds a value that is not a hash", {
      ...where,
      reason: "not-a-hash",
    });
  }
  if (NOT_AN_INTEGER.test(message)) {
    return new KvIdError("reply", "the counter field does not hold an integer", {
      ...where,
      reason: "not-a-counter",
    });
  }
  if (/^KVID_LAYOUT/.test(message)) {
    return new KvIdError(
      "config",
      message.replace(/^KVID_LAYOUT /, "").replace(/ script: .*/, ""),
      where,
    );
  }
  // Setup mistakes waiting cannot fix: said at once as "config", the server's words included.
  if (/(^|: )(NOAUTH|WRONGPASS)|invalid password|auth/i.test(message)) {
    return new KvIdError("config", `authentication failed: ${message}`, {
      ...where,
      reason: "auth",
    });
  }
  if (/(^|: )NOPERM|can't run this command|no permissions/i.test(message)) {
    return new KvIdError("config", `the user may not run what kvid needs: ${message}`, {
      ...where,
      reason: "auth",
    });
  }
  if (/unknown command|Unknown Redis command/i.test(message)) {
    return new KvIdError(
      "config",
      `the server does not know a command kvid needs (HINCRBY, EVAL, EVALSHA renamed or disabled?): ${message}`,
      where,
    );
  }
  return new KvIdError("reply", `the server refused the reservation: ${message}`, where);
}

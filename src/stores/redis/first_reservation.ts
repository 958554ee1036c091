/**
 * A generator's first reservation and the server's durability in one call
 * ({@linkcode firstReservation}): `FIRST_RESERVE_SCRIPT` (scripts.ts) reads the `INFO` facts and
 * the hash's TTL and reserves only on a server that is served, with the `CONFIG GET`s a script
 * cannot send and a `WAITAOF` probe pipelined beside it: one round trip for a client's first ID
 * (before: the read, the reservation, then the `WAITAOF` probe, three).
 *
 * @module
 */

import type { Reservation, StoreDurability } from "../../contract/store.ts";
import type {
  RedisDurabilityOptions as DurabilityOptions,
  RedisReserveOptions as ReserveOptions,
} from "./store_options.ts";
import type { RedisClient } from "../../contract/redis_client.ts";
import { isReplyError, toKvIdError } from "../../contract/store_errors.ts";
import { probeWaitAof } from "./confirm.ts";
import { durabilityOf, info, infoFromFacts, readConfigs, shareRead } from "./durability_probe.ts";
import { isNoScripting } from "./lua_script.ts";
import { reservationFrom, reserveArgs } from "./replies.ts";
import { FIRST_RESERVE_SCRIPT } from "./scripts.ts";

/** What the first call found: the server's durability, and the range if it reserved one. */
export interface FirstCall {
  /** The read, judged as {@linkcode durabilityOf} does. */
  durability: StoreDurability;
  /** The range reserved (not yet confirmed), or undefined when the script did not reserve. */
  reservation?: Reservation;
  /** When the call was sent (`performance.now()`): the confirmation's budget counts from it. */
  started: number;
}

/**
 * Read the server's durability and reserve in one script call, and share the read with the
 * client's other generators at once (those starting meanwhile wait for it instead of reading
 * the server each). `"no scripting"`: the server has none; `"apart"`: the server refused the
 * script for another reason (`INFO` forbidden, a counter it refuses): the read and the
 * reservation are then made apart, each saying its own refusal. A transient state or a lost
 * connection rejects.
 */
export async function firstReservation(
  client: RedisClient,
  key: string,
  field: string,
  count: number,
  options: ReserveOptions,
  asked: DurabilityOptions,
): Promise<FirstCall | "no scripting" | "apart"> {
  const stated = asked.stated;
  const [, n, floor, raiseTo, , most] = reserveArgs(field, count, options);
  const bit = (on: boolean) => on ? "1" : "0";
  const flags = bit(options.loadStep === true) + bit(options.pool === true) +
    bit(asked.mode === "best-effort" || (asked.replicas ?? 0) > 0) +
    bit(stated.appendonly === "yes") + bit(asked.mode === "best-effort") +
    (stated.maxmemory_policy ?? "");
  // Six arguments (see FIRST_RESERVE_SCRIPT): the step and pool fields are named by the script.
  const args = [field, n, floor, raiseTo, most, flags];
  const started = performance.now();
  const reply = FIRST_RESERVE_SCRIPT.evalWhole(client, [key], args);
  if (options.waitAof === true) probeWaitAof(client, key);
  // Should the script fail, the shared read is made on its own (the plain probe).
  const facts = reply.then((r) => {
    if (!Array.isArray(r) || r.length !== 8) throw new Error("unexpected script reply");
    return infoFromFacts(r[6], r[7]);
  }).catch(() => info(client, key));
  const read = Promise.all([facts, ...readConfigs(client)] as const);
  shareRead(client, key, read);
  let raw: unknown;
  try {
    raw = await reply;
  } catch (err) {
    read.catch(() => {}); // shared: its failure is another caller's
    if (isReplyError(err) && isNoScripting(err)) return "no scripting";
    const error = toKvIdError(err, key, field);
    if (isReplyError(err) && error.code !== "unavailable") return "apart";
    throw error;
  }
  let durability: StoreDurability;
  try {
    durability = durabilityOf(await read, key, asked);
  } catch (err) {
    throw toKvIdError(err, key, field); // a range it reserved is spent
  }
  const reserved = Array.isArray(raw) && raw[0] !== null && raw[0] !== false;
  return { durability, reservation: reserved ? reservationFrom(raw) : undefined, started };
}

/**
 * The options a range reserved after a read of `durability` is confirmed with: under
 * `"best-effort"`, a server read as keeping no AOF cannot confirm with `WAITAOF`; the loss was
 * accepted, so it is not asked (as the generator decides for its later reservations).
 */
export function confirmedAs(
  options: ReserveOptions,
  asked: DurabilityOptions,
  durability: StoreDurability,
): ReserveOptions {
  const noAof = asked.mode === "best-effort" && durability.settings.appendonly === "no";
  return noAof ? { ...options, waitAof: false } : options;
}

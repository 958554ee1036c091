/**
 * Confirming a reservation before any of its IDs is served ({@linkcode confirmReservation}):
 * `WAITAOF` (fsynced to the server's AOF) and `WAIT` (received by replicas), on the connection
 * that just served it.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import type { RedisClient } from "../../contract/redis_client.ts";
import type { RedisReserveOptions } from "./store_options.ts";
import { errorMessage, isReplyError, toKvIdError } from "../../contract/store_errors.ts";
import { parseInteger } from "./replies.ts";

// Clients whose server answered that it has no WAITAOF (Redis < 7.2, Kvrocks): not asked again.
const withoutWaitAof = new WeakSet<RedisClient>();

/**
 * Remember that the server behind `client` has no `WAITAOF` (its `INFO` said so: Redis before
 * 7.2, Kvrocks): it is not asked, which saves a client's first generator a round trip.
 */
export function knownWithoutWaitAof(client: RedisClient): void {
  withoutWaitAof.add(client);
}

/**
 * Confirm a reservation just made on `client` before any of its IDs is served: with
 * `options.waitAof` (and a server that has it), `WAITAOF 1 0 ms`: fsynced to the server's AOF;
 * then, with `replicas`, `WAIT replicas ms`: received by that many replicas. Throws when not
 * confirmed (the range is then spent, never handed out).
 *
 * Replicas are not asked to fsync (`WAITAOF 1 replicas`): a replica with `appendfsync
 * everysec` acknowledges its fsync with its once-a-second ACK, so a reservation would then take about a
 * second instead of a round trip with `WAIT`.
 */
export async function confirmReservation(
  client: RedisClient,
  key: string,
  field: string,
  options: Pick<RedisReserveOptions, "replicas" | "waitAof">,
  ms: number,
  before?: Promise<string>,
): Promise<void> {
  const replicas = options.replicas ?? 0;
  const started = performance.now();
  if (options.waitAof === true) await waitForAof(client, key, field, ms, before);
  if (replicas > 0) {
    const left = Math.max(1, Math.floor(ms - (performance.now() - started)));
    await waitForReplicas(client, key, field, replicas, left, before);
  }
}

/**
 * Whether a reservation is about to be confirmed on `client` (`WAIT`, or a `WAITAOF` the server
 * is known to have), so that {@linkcode connectionOf} must be asked before it.
 */
export function confirms(
  client: RedisClient,
  options: Pick<RedisReserveOptions, "replicas" | "waitAof">,
): boolean {
  return (options.replicas ?? 0) > 0 || (options.waitAof === true && aofKnown.has(client));
}

// Clients whose server has no CLIENT INFO (Redis < 6.2): CLIENT ID names the connection.
const withoutClientInfo = new WeakSet<RedisClient>();

/**
 * Which connection of `client` serves `key`: `CLIENT INFO`'s `id`, `addr` and `laddr` (`CLIENT
 * ID` on a server without it). Asked just before a reservation and again right behind its
 * `WAIT`/`WAITAOF` (in the same order on the wire, no round trip more): a client that lost the
 * connection in between and re-sent the confirmation on a new one (node-redis' Sentinel client
 * does) gets an answer there at once, for writes that connection never made; the two names
 * then differ, and the range is spent. Resolves `"unknown"` when the client cannot send it.
 */
export async function connectionOf(client: RedisClient, key: string): Promise<string> {
  const old = withoutClientInfo.has(client);
  let reply: unknown;
  try {
    if (!old && typeof client.clientInfo === "function") reply = await client.clientInfo(key);
    else if (typeof client.sendCommand === "function") {
      reply = await client.sendCommand("CLIENT", [old ? "ID" : "INFO"]);
    } else return "unknown";
  } catch (cause) {
    const message = errorMessage(cause);
    if (isReplyError(cause) && /(^|: )NOPERM/.test(message)) {
      throw new KvIdError(
        "config",
        `the user may not run CLIENT ${
          old ? "ID" : "INFO"
        }, which checks that a reservation's WAIT or WAITAOF ran on the connection that made it: allow it (ACL +client|info +client|id): ${message}`,
        { key, cause },
      );
    }
    if (!old && isReplyError(cause) && UNKNOWN.test(message)) {
      withoutClientInfo.add(client);
      return "no CLIENT INFO"; // never equal to an answer: this confirmation is not trusted
    }
    throw cause;
  }
  const text = reply instanceof Uint8Array ? new TextDecoder().decode(reply) : String(reply);
  if (old) return `id=${text}`;
  return ["id", "addr", "laddr"].map((f) => new RegExp(`(?:^| )${f}=(\\S*)`).exec(text)?.[0].trim())
    .join(" ");
}

/**
 * Throw unless the connection named `after` (asked behind a confirmation) is the one named
 * `before` (asked before the reservation).
 */
async function sameConnection(
  before: Promise<string>,
  after: Promise<string>,
  what: string,
  where: { key: string; field: string },
): Promise<void> {
  const [b, a] = await Promise.all([before, after]);
  if (b === "unknown" && a === "unknown") return; // a client that cannot say: as before
  if (a !== b) {
    throw new KvIdError(
      "connection",
      `the ${what} ran on another connection than the reservation (${b} then ${a}: the client reconnected and sent it again), so it confirmed nothing; its IDs are spent`,
      where,
    );
  }
}

/**
 * `WAITAOF 1 0 ms` right after a reservation on the same connection: resolves true once the
 * server fsynced it to its AOF, false when it cannot be asked (a server without `WAITAOF`,
 * remembered for the client; a client without `sendCommand`), else throws: the range is then
 * spent.
 */
export async function waitForAof(
  client: RedisClient,
  key: string,
  field: string,
  ms: number,
  before?: Promise<string>,
): Promise<boolean> {
  if (withoutWaitAof.has(client)) return false;
  // The first WAITAOF on a client finds out whether the server has it; reservations made
  // meanwhile wait for that answer rather than each sending one (10,000 new names at once on
  // Redis 7.0 sent 10,000 WAITAOF that all failed).
  const probe = aofProbes.get(client);
  if (probe !== undefined) {
    await probe.catch(() => {});
    if (withoutWaitAof.has(client)) return false;
  } else if (!aofKnown.has(client)) {
    const sent = sendWaitAof(client, key, field, ms, before);
    aofProbes.set(client, sent);
    try {
      return await sent;
    } finally {
      aofProbes.delete(client);
    }
  }
  return await sendWaitAof(client, key, field, ms, before);
}

// A client's first WAITAOF, in flight: the others wait for what it finds.
const aofProbes = new WeakMap<RedisClient, Promise<unknown>>();
// Clients whose server answered WAITAOF once (it has the command).
const aofKnown = new WeakSet<RedisClient>();

/**
 * Find out whether the server behind `client` has `WAITAOF` beside a client's first reservation,
 * in the same round trip: `WAITAOF 0 0 0`, which never blocks (it waits for nothing). Before, the
 * first confirmation asked, one round trip more for a client's first ID on a server without it
 * (Redis 7.0). The confirmation itself is still sent after the reservation's reply.
 */
export function probeWaitAof(client: RedisClient, key: string): void {
  if (withoutWaitAof.has(client) || aofKnown.has(client) || aofProbes.has(client)) return;
  // Any node answers whether it has the command: sendCommand first (it is not a confirmation).
  let reply: Promise<unknown>;
  if (typeof client.sendCommand === "function") {
    reply = client.sendCommand("WAITAOF", ["0", "0", "0"]);
  } else if (typeof client.waitAof === "function") reply = client.waitAof(key, 0, 0, 0);
  else return;
  const probe = reply.then(() => aofKnown.add(client), (cause) => {
    if (isReplyError(cause) && UNKNOWN.test(errorMessage(cause))) withoutWaitAof.add(client);
    // Any other answer (NOPERM, a replica): the confirmation asks again and says it.
  }).finally(() => aofProbes.delete(client));
  aofProbes.set(client, probe);
}

const UNKNOWN = /unknown command|not supported|unknown subcommand/i;

async function sendWaitAof(
  client: RedisClient,
  key: string,
  field: string,
  ms: number,
  before?: Promise<string>,
): Promise<boolean> {
  const where = { key, field };
  let reply: unknown;
  let after: Promise<string> | undefined;
  try {
    let sent: Promise<unknown>;
    if (typeof client.waitAof === "function") {
      sent = client.waitAof(key, 1, 0, ms);
    } else if (typeof client.sendCommand === "function") {
      sent = client.sendCommand("WAITAOF", ["1", "0", String(ms)]);
    } else {
      return false;
    }
    // Right behind it on the same connection: which connection answered it.
    after = before === undefined ? undefined : connectionOf(client, key);
    after?.catch(() => {});
    reply = await sent;
  } catch (cause) {
    const message = errorMessage(cause);
    if (isReplyError(cause) && UNKNOWN.test(message)) {
      withoutWaitAof.add(client);
      return false;
    }
    if (isReplyError(cause) && /(^|: )NOPERM/.test(message)) {
      throw new KvIdError(
        "config",
        `the user may not run WAITAOF, which confirms each reservation is on disk: allow it (ACL +waitaof), or set waitAof: false: ${message}`,
        { ...where, cause },
      );
    }
    if (/appendonly is disabled/i.test(message)) {
      throw new KvIdError(
        "config",
        `the server keeps no AOF (appendonly no), so WAITAOF cannot confirm the reservation is on disk and its IDs are spent: turn AOF on (CONFIG SET appendonly yes, and appendonly yes in the config file), or set waitAof: false to accept that a crash can lose reservations: ${message}`,
        { ...where, cause },
      );
    }
    if (/replica instances|UNBLOCKED/i.test(message)) {
      throw new KvIdError(
        "connection",
        `the server became a replica before confirming the reservation; its IDs are spent: ${message}`,
        { ...where, cause },
      );
    }
    throw toKvIdError(cause, key, field);
  }
  const counts = Array.isArray(reply) ? reply.map(parseInteger) : [];
  const local = counts[0];
  if (counts.length !== 2 || local === undefined) {
    throw new KvIdError(
      "reply",
      `WAITAOF did not reply with two integers: ${String(reply)}`,
      where,
    );
  }
  aofKnown.add(client);
  if (local.value < 1n) {
    throw new KvIdError(
      "timeout",
      `the server did not fsync the reservation to its AOF within ${ms} ms; its IDs are spent`,
      where,
    );
  }
  if (before !== undefined && after !== undefined) {
    await sameConnection(before, after, "WAITAOF", where);
  }
  return true;
}

/**
 * `WAIT replicas ms` right after a reservation on the same connection: resolves once at least
 * `replicas` replicas acknowledged it, else throws (the range is then spent, never handed out).
 */
export async function waitForReplicas(
  client: RedisClient,
  key: string,
  field: string,
  replicas: number,
  ms: number,
  before?: Promise<string>,
): Promise<void> {
  const where = { key, field };
  let reply: unknown;
  let after: Promise<string> | undefined;
  try {
    let sent: Promise<unknown> | undefined;
    if (typeof client.waitReplicas === "function") {
      sent = client.waitReplicas(key, replicas, ms);
    } else if (typeof client.sendCommand === "function") {
      sent = client.sendCommand("WAIT", [String(replicas), String(ms)]);
    }
    if (sent !== undefined) {
      // Right behind it on the same connection: which connection answered it.
      after = before === undefined ? undefined : connectionOf(client, key);
      after?.catch(() => {});
      reply = await sent;
    } else {
      throw new KvIdError(
        "config",
        "the replicas option needs a client with waitReplicas() or sendCommand() to send WAIT",
        where,
      );
    }
  } catch (cause) {
    if (cause instanceof KvIdError) throw cause;
    if (
      isReplyError(cause) &&
      /unknown command|not supported|unknown subcommand/i.test(errorMessage(cause))
    ) {
      throw new KvIdError(
        "config",
        `the server has no WAIT command, which the replicas option needs (Redis >= 3, Kvrocks >= 2.13): ${
          errorMessage(cause)
        }`,
        { ...where, cause },
      );
    }
    if (/replica instances|UNBLOCKED/i.test(errorMessage(cause))) {
      // Demoted while (or just before) waiting: a failover, transient; the range is spent.
      throw new KvIdError(
        "connection",
        `the server became a replica before confirming the reservation; its IDs are spent: ${
          errorMessage(cause)
        }`,
        { ...where, cause },
      );
    }
    throw toKvIdError(cause, key, field);
  }
  const seen = parseInteger(reply);
  if (seen === undefined) {
    throw new KvIdError("reply", `WAIT did not reply with an integer: ${String(reply)}`, where);
  }
  if (seen.value < BigInt(replicas)) {
    throw new KvIdError(
      "timeout",
      `the reservation reached ${seen.value} of ${replicas} replicas within ${ms} ms; its IDs are spent`,
      where,
    );
  }
  if (before !== undefined && after !== undefined) {
    await sameConnection(before, after, "WAIT", where);
  }
}

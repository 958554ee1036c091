/**
 * Confirming a reservation before any of its IDs is served ({@linkcode confirmReservation}):
 * `WAITAOF` (fsynced to the server's AOF) and `WAIT` (received by replicas), on the connection
 * that just served it.
 *
 * @module
 */

import { KvIdError } from "../../contract/errors.ts";
import type { RedisClient } from "../../contract/redis_client.ts";
import type { RedisReserveOptions as ReserveOptions } from "./store_options.ts";
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
  options: Pick<ReserveOptions, "replicas" | "waitAof">,
  ms: number,
): Promise<void> {
  const replicas = options.replicas ?? 0;
  const started = performance.now();
  if (options.waitAof === true) await waitForAof(client, key, field, ms);
  if (replicas > 0) {
    const left = Math.max(1, Math.floor(ms - (performance.now() - started)));
    await waitForReplicas(client, key, field, replicas, left);
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
    const sent = sendWaitAof(client, key, field, ms);
    aofProbes.set(client, sent);
    try {
      return await sent;
    } finally {
      aofProbes.delete(client);
    }
  }
  return await sendWaitAof(client, key, field, ms);
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
): Promise<boolean> {
  const where = { key, field };
  let reply: unknown;
  try {
    if (typeof client.waitAof === "function") {
      reply = await client.waitAof(key, 1, 0, ms);
    } else if (typeof client.sendCommand === "function") {
      reply = await client.sendCommand("WAITAOF", ["1", "0", String(ms)]);
    } else {
      return false;
    }
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
): Promise<void> {
  const where = { key, field };
  let reply: unknown;
  try {
    if (typeof client.waitReplicas === "function") {
      reply = await client.waitReplicas(key, replicas, ms);
    } else if (typeof client.sendCommand === "function") {
      reply = await client.sendCommand("WAIT", [String(replicas), String(ms)]);
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
}

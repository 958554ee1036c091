/**
 * Failed authentication, limited per peer address: after `perMinute` answers of 401 (a wrong or
 * missing token, a wrong sign-in) within a minute of its first, a peer is answered 429 with
 * `Retry-After` until that minute is over, its tokens not compared. The table of peers is
 * bounded: past {@linkcode MAX_PEERS} the oldest entry is dropped.
 *
 * @module
 */

import { errorResponse } from "./respond.ts";

/** Failed authentications a peer may have per minute before it is answered 429. */
export const AUTH_FAILURES_PER_MINUTE = 10;
/** Peers remembered at most (about 100 bytes each). */
export const MAX_PEERS = 10_000;
const WINDOW_MS = 60_000;

/** The failures of one peer in its current window. */
interface Window {
  start: number;
  count: number;
}

/** Failed authentications by peer address, and the 429 answer of a peer past its limit. */
export class FailedAuth {
  // Insertion order is the order windows started in: the first entry is the oldest.
  readonly #peers = new Map<string, Window>();
  readonly #perMinute: number;
  readonly #maxPeers: number;
  #failures = 0;
  #throttled = 0;

  /** At most `perMinute` failures per peer and minute, `maxPeers` peers remembered. */
  constructor(perMinute: number = AUTH_FAILURES_PER_MINUTE, maxPeers: number = MAX_PEERS) {
    this.#perMinute = perMinute;
    this.#maxPeers = maxPeers;
  }

  /** Peers remembered now. */
  get size(): number {
    return this.#peers.size;
  }

  /** The 429 answer for `peer` at `now` (epoch ms) when it is past its limit, else undefined. */
  throttle(peer: string, now: number): Response | undefined {
    const w = this.#peers.get(peer);
    if (w === undefined || w.count < this.#perMinute) return undefined;
    const left = w.start + WINDOW_MS - now;
    if (left <= 0) {
      this.#peers.delete(peer);
      return undefined;
    }
    this.#throttled++;
    return errorResponse(
      429,
      "too_many_failures",
      `${this.#perMinute} failed authentications from this address within a minute: ` +
        "try again later",
      { "retry-after": String(Math.ceil(left / 1000)) },
    );
  }

  /** Count a failed authentication of `peer` at `now`. */
  failed(peer: string, now: number): void {
    this.#failures++;
    const w = this.#peers.get(peer);
    if (w !== undefined && now - w.start < WINDOW_MS) {
      w.count++;
      return;
    }
    this.#peers.delete(peer); // a new window goes to the end of the order
    while (this.#peers.size >= this.#maxPeers) {
      this.#peers.delete(this.#peers.keys().next().value!);
    }
    this.#peers.set(peer, { start: now, count: 1 });
  }

  /** Prometheus lines: failures counted, requests answered 429, peers remembered. */
  metrics(): string[] {
    return [
      "# HELP kvid_auth_failures_total Requests answered 401 (a wrong or missing token, a failed sign-in).",
      "# TYPE kvid_auth_failures_total counter",
      `kvid_auth_failures_total ${this.#failures}`,
      "# HELP kvid_auth_throttled_total Requests answered 429 for too many failed authentications.",
      "# TYPE kvid_auth_throttled_total counter",
      `kvid_auth_throttled_total ${this.#throttled}`,
      "# HELP kvid_auth_failing_peers Peer addresses with failed authentications this minute.",
      "# TYPE kvid_auth_failing_peers gauge",
      `kvid_auth_failing_peers ${this.#peers.size}`,
    ];
  }
}

/**
 * The option `authFailuresPerMinute` checked: a non-negative integer (0: no limit), default
 * {@linkcode AUTH_FAILURES_PER_MINUTE}.
 */
export function failuresPerMinuteOf(value: number | undefined): number {
  const v = value ?? AUTH_FAILURES_PER_MINUTE;
  if (!Number.isInteger(v) || v < 0) {
    throw new RangeError(
      `kvid service: authFailuresPerMinute must be a non-negative integer, got ${v}`,
    );
  }
  return v;
}

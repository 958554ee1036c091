/**
 * The outage state of a generator's store: `ok`, `failing` (reservations failed, retried with
 * backoff) or `down` (known down: with `failFast`, calls are told at once while one probe at a
 * time looks for the store's return).
 *
 * @module
 */

import { isTransient, KvIdError } from "../contract/errors.ts";

/** First wait after a failure, ms (doubled per failure in a row). */
const BACKOFF_BASE_MS = 20;
/** Longest wait between retries, ms. */
const BACKOFF_MAX_MS = 2_000;

/** Where a generator's store stands (see {@linkcode Outage}). */
export type OutageState = "ok" | "failing" | "down";

/**
 * What a failed reservation asks of the generator ({@linkcode Outage.failed}):
 * `"refused"`: a mistake waiting cannot fix, tell the waiting callers now (with the error);
 * `"down"`: the store was known down already, tell them it is;
 * `"hung"`: the attempt took the whole timeout, so the store is now known down ({@linkcode
 * Outage.markDown});
 * `"retry"`: transient, the callers keep waiting until their deadline.
 */
export type FailureVerdict = "refused" | "down" | "hung" | "retry";

/**
 * The outage state machine. Pure: every transition is handed the time (ms, the clock of
 * `performance.now()`), and the backoff its randomness; it sets no timer and rejects no call, it
 * says what the generator should do.
 *
 * `ok` --failed--> `failing` --markDown (a call waited `timeout`, or an attempt hung)--> `down`;
 * `succeeded` returns to `ok` from either. Only with `failFast` does the state become `down`.
 *
 * @example A store that fails, is known down, then comes back
 * ```ts
 * import { Outage } from "./outage.ts";
 * import { KvIdError } from "../contract/errors.ts";
 * import assert from "node:assert/strict";
 *
 * const outage = new Outage({ failFast: true, timeout: 1_000, key: "kvid", field: "order" });
 * const lost = new KvIdError("connection", "connection refused");
 * assert.equal(outage.failed(lost, 0, 10, () => 0.5), "retry");
 * assert.equal(outage.state, "failing");
 * assert.ok(outage.markDown(1_000)); // a call waited its whole timeout
 * assert.equal(outage.state, "down");
 * assert.equal(outage.downError(1_000).code, "unavailable");
 * outage.succeeded();
 * assert.equal(outage.state, "ok");
 * ```
 */
export class Outage {
  /** Reservations that failed, in all (`stats().failures`). */
  failures = 0;
  /** Failures since the last success. */
  failuresInRow = 0;
  /** When the first of the failures in a row began. */
  failingSince = 0;
  /** Since when the store is known down; undefined when it is not. */
  downSince: number | undefined;
  /** A call was turned away since the last probe started: another probe is wanted. */
  probeWanted = false;
  /** No reservation before this time (backoff); 0: none pending. */
  retryAt = 0;
  /** The last reservation error, cleared by a success. */
  lastError: KvIdError | undefined;
  readonly #failFast: boolean;
  readonly #timeout: number;
  readonly #key: string;
  readonly #field: string;
  readonly #where: () => string;

  /**
   * @param options `failFast`: whether the store can be known down. `timeout`: the generator's,
   *   ms. `key`, `field`: the counter, named in errors; `where`: in its store's words.
   */
  constructor(
    options: {
      failFast: boolean;
      timeout: number;
      key: string;
      field: string;
      where?: () => string;
    },
  ) {
    this.#failFast = options.failFast;
    this.#timeout = options.timeout;
    this.#key = options.key;
    this.#field = options.field;
    this.#where = options.where ?? (() => "");
  }

  /** `ok`, `failing` or `down`. */
  get state(): OutageState {
    return this.downSince !== undefined ? "down" : this.failuresInRow > 0 ? "failing" : "ok";
  }

  /** A reservation succeeded: back to `ok`. */
  succeeded(): void {
    this.failuresInRow = 0;
    this.retryAt = 0;
    this.downSince = undefined;
    this.lastError = undefined;
  }

  /**
   * A reservation that started at `startedAt` failed at `now` with `error`: count it, back off
   * (exponential with jitter, `random` in 0..1), and say what the callers must be told.
   */
  failed(
    error: KvIdError,
    startedAt: number,
    now: number,
    random: () => number = Math.random,
  ): FailureVerdict {
    this.failures++;
    if (this.failuresInRow++ === 0) this.failingSince = startedAt;
    this.lastError = error;
    this.retryAt = now + backoff(this.failuresInRow, this.#timeout / 2, random);
    // A refusal will not heal by waiting: tell the callers now. Others retry until timeout.
    if (!isTransient(error.code)) return "refused";
    if (this.downSince !== undefined) return "down";
    // An attempt that took the whole timeout (a hung server): known down too.
    if (now - startedAt >= this.#timeout) return "hung";
    return "retry";
  }

  /**
   * The store is known down from `now` (a call waited its whole timeout while reservations
   * failed, or one hung). Returns true when this changed the state (with `failFast` only, once):
   * the generator then tells the waiting callers and starts a probe.
   */
  markDown(now: number): boolean {
    if (!this.#failFast || this.downSince !== undefined) return false;
    this.downSince = now;
    this.probeWanted = true;
    return true;
  }

  /**
   * A call arriving at `now` with no ID buffered: the error to reject it with at once, if any.
   * `probing`: a probe is in flight or waiting out its backoff.
   */
  turnAway(now: number, probing: boolean): KvIdError | undefined {
    const last = this.lastError;
    if (last !== undefined && !isTransient(last.code) && now < this.retryAt) {
      return last; // fail fast on a refusal, retried after the backoff
    }
    if (this.downSince !== undefined && probing) {
      // Known down and a probe is on its way: say so now rather than after `timeout`.
      this.probeWanted = true;
      return this.downError(now);
    }
    return undefined;
  }

  /** The error of a call turned away while the store is known down. */
  downError(now: number): KvIdError {
    const since = Math.round(now - this.failingSince);
    return new KvIdError(
      "unavailable",
      `the store is down (no reservation succeeded for ${since} ms): failing fast while a probe retries`,
      { key: this.#key, field: this.#field, where: this.#where(), cause: this.lastError },
    );
  }
}

/**
 * Exponential backoff with jitter: half fixed, half random, after `failures` in a row; at most
 * `cap` ms (half the timeout, so a caller waiting `timeout` sees at least one retry) and 2 s.
 */
export function backoff(failures: number, cap: number, random: () => number = Math.random): number {
  const ms = Math.min(BACKOFF_MAX_MS, cap, BACKOFF_BASE_MS * 2 ** Math.min(failures - 1, 16));
  return ms / 2 + random() * ms / 2;
}

/**
 * Whether the service can serve (`GET /readyz`, `kvid_store_up`, the status page): the store
 * answers, through the probe given or one the Store contract offers, and under `"strict"` its
 * `durability()` says it cannot lose reservations. No store is named here.
 *
 * @module
 */

import { withDeadline } from "../runtime/deadline_timer.ts";
import type { DurabilityMode } from "../contract/durability.ts";
import { durabilityRefusal } from "../engine/durability_gate.ts";
import { SERVICE_OPT_OUT } from "./refusals.ts";
import { KvIdError } from "../contract/errors.ts";
import type { AnyStore, StoreDurability } from "../contract/store.ts";
import { toKvIdError } from "../contract/store_errors.ts";
import type { Generators } from "./generators.ts";

/**
 * What the readiness probe found: the store answers; is still being connected to (`starting`:
 * no probe has answered yet, within {@linkcode STARTING_MS} of the service's start); does not
 * answer; refuses the configuration (credentials, permissions, a command); or answers but can
 * lose reservations, refused under `"strict"` (`not-durable`), and why.
 */
export type Readiness =
  | { state: "up" }
  | { state: "starting" }
  | { state: "down" }
  | { state: "config"; why: string }
  | { state: "not-durable"; why: string };

/** Whether the store answered the probe (`kvid_store_up`), durable or not. */
export function storeAnswers(r: Readiness): boolean {
  return r.state === "up" || r.state === "not-durable";
}

/** How long after the service's start a store not answering yet is `starting`, not `down` (ms). */
export const STARTING_MS = 5_000;

/** How long the probe may take before the store counts as not answering (ms). */
export const READY_TIMEOUT_MS = 1_000;

const CONFIG_REFUSED =
  "the store refuses this service's configuration (credentials, permissions or a command it needs): fix it, see the service log";

/** What {@linkcode readiness} reads. */
export interface ReadinessOptions {
  store: AnyStore;
  /** The generators' `durability` mode. */
  durability: DurabilityMode;
  /** The probe the caller gave (`ServiceOptions.ready`), if any. */
  probe: (() => Promise<unknown>) | undefined;
  /** The live generators, whose last reservations judge a store that offers no probe. */
  generators: Generators;
}

/**
 * The readiness check of one service. Without a probe given: the store's clock (`ServerClock.now`,
 * one round trip to its server) when it has one, else whether no generator's last reservation
 * failed; then the store's `durability()` read, which reads its server too.
 *
 * @returns A function answering the current {@linkcode Readiness}, within
 *   {@linkcode READY_TIMEOUT_MS} (a loop blocked by the application is not a store that does not
 *   answer: `withDeadline`).
 */
export function readiness(options: ReadinessOptions): () => Promise<Readiness> {
  const { store, durability, generators } = options;
  const probe = options.probe ??
    (typeof store.now === "function" ? () => store.now!() : () => lastReservations(generators));
  const check = async (): Promise<string | undefined> => {
    await probe();
    if (store.durability === undefined) return undefined;
    // The generators' verdict, the one there is (engine/durability_gate.ts). No counter named:
    // the service's whole store, in the service's own knob.
    const judge = (d: StoreDurability) => durabilityRefusal(d, durability, "", "", SERVICE_OPT_OUT);
    const d = await store.durability("kvid", { field: "", mode: durability, stated: {}, judge });
    return judge(d)?.message;
  };
  const started = Date.now();
  let answered = false;
  return async () => {
    try {
      const refusal = await withDeadline(check(), READY_TIMEOUT_MS, () => new Error("slow"));
      answered = true;
      return refusal === undefined ? { state: "up" } : { state: "not-durable", why: refusal };
    } catch (err) {
      // The probe's own words (a reply error of the client) or the generators' last error.
      const kvid = err instanceof KvIdError ? err : toKvIdError(err, "kvid", "");
      if (kvid.code === "config") {
        answered = true;
        return { state: "config", why: CONFIG_REFUSED };
      }
      return !answered && Date.now() - started < STARTING_MS
        ? { state: "starting" }
        : { state: "down" };
    }
  };
}

/** Rejects when a live generator's last reservation failed (`config` when it was refused). */
function lastReservations(generators: Generators): Promise<void> {
  for (const e of generators.entries()) {
    const last = e.snapshot(Date.now()).lastError;
    if (last !== null) {
      const code = last.startsWith("config:") ? "config" : "connection";
      return Promise.reject(
        new KvIdError(code, "the store fails", { key: "kvid", field: e.name }),
      );
    }
  }
  return Promise.resolve();
}

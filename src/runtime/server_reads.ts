/**
 * The one signal a generator gives every store's cached server reads: a process-wide count of
 * the reasons found to doubt them ({@linkcode markServerReadsStale}). Mutable process state, so
 * it lives here and not in the contract.
 *
 * @module
 */

let epoch = 0;

/**
 * Stop sharing every server read made so far: the next read of each client and hash reads the
 * server again. Called by a generator that marks its read due (a transient failure may hide a
 * reconnect to a restarted or other server; a rollback says the server lost data; a refusal
 * may be fixed).
 */
export function markServerReadsStale(): void {
  epoch++;
}

/** How many times {@linkcode markServerReadsStale} was called: a store's cached read made at an
 * older count is not shared. */
export function serverReadsEpoch(): number {
  return epoch;
}

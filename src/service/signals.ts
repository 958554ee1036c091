/**
 * How the service's entry points stop: once, on SIGTERM or SIGINT, answering what is in flight.
 *
 * @module
 */

/** The longest a stop waits for requests in flight before exiting anyway. */
const FORCE_EXIT_MS = 10_000;

/**
 * On the first SIGTERM or SIGINT: log, run `close` (answer requests in flight, close the
 * generators and the client), exit 0; exit anyway after 10 s. Where there are no signals (Deno
 * Deploy; SIGTERM on Windows) nothing is listened for.
 *
 * @param close What stopping does before the exit.
 */
export function exitOnSignals(close: () => Promise<void>): void {
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    console.error("kvid service: stopping: answering requests in flight");
    const force = setTimeout(() => {
      console.error("kvid service: requests still in flight after 10 s: exiting anyway");
      Deno.exit(0);
    }, FORCE_EXIT_MS);
    try {
      await close();
    } finally {
      clearTimeout(force);
    }
    console.error("kvid service: stopped");
    Deno.exit(0);
  };
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    try {
      Deno.addSignalListener(signal, stop);
    } catch {
      // no such signal here
    }
  }
}

/**
 * How a CLI command ends: its exit codes ({@linkcode EXIT}) and the error carrying one
 * ({@linkcode CliError}).
 *
 * @module
 */

/**
 * The exit codes of the CLI's `main`: 0 done, 1 the command failed (no such counter, refused to
 * lower, wrong type, ...), 2 bad arguments, 3 the server could not be reached or used (network,
 * authentication, timeout).
 *
 * @example
 * ```ts
 * import { EXIT } from "./exit.ts";
 * import assert from "node:assert/strict";
 *
 * assert.ok(EXIT.usage === 2 && EXIT.unreachable === 3);
 * ```
 */
export const EXIT: Readonly<{ ok: 0; failed: 1; usage: 2; unreachable: 3 }> = Object.freeze({
  ok: 0,
  failed: 1,
  usage: 2,
  unreachable: 3,
});

/**
 * A failure of a command with its exit code; `main` prints the message and exits with the code.
 *
 * @example
 * ```ts
 * import { CliError, EXIT } from "./exit.ts";
 * import assert from "node:assert/strict";
 *
 * const err = new CliError(EXIT.failed, 'no counter "ordr" in hash "kvid"');
 * assert.ok(err.exit === 1 && err instanceof Error);
 * ```
 */
export class CliError extends Error {
  /**
   * @param exit The exit code ({@linkcode EXIT}).
   * @param message What went wrong, for a person.
   */
  constructor(readonly exit: number, message: string) {
    super(message);
  }
}

/**
 * A bad-arguments failure (exit 2), pointing at `kvid --help`.
 *
 * @example
 * ```ts
 * import { usage } from "./exit.ts";
 * import assert from "node:assert/strict";
 *
 * const err = usage("no command given");
 * assert.ok(err.exit === 2 && err.message.startsWith("no command given\n"));
 * ```
 *
 * @param message What was wrong.
 * @returns The error, to throw.
 */
export function usage(message: string): CliError {
  return new CliError(EXIT.usage, `${message}\nRun "kvid --help" for usage.`);
}

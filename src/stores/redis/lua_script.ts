/**
 * A Lua script run by its SHA-1 ({@linkcode LuaScript}), and how a server without scripting
 * says so ({@linkcode isNoScripting}).
 *
 * @module
 */

import type { RedisClient } from "../../contract/redis_client.ts";
import { errorMessage } from "../../contract/store_errors.ts";

/**
 * A Lua script: sent whole with `EVAL` on its first use on a client (which also loads it into the
 * server's script cache), then run with `EVALSHA`, sent whole again when the server answers
 * `NOSCRIPT` (after a restart or `SCRIPT FLUSH`). A fresh process's first reservation is one round
 * trip, not a `NOSCRIPT` then an `EVAL`.
 */
export class LuaScript {
  /** The script's source. */
  readonly source: string;
  #sha: Promise<string> | undefined;
  // Clients this script was sent to whole: EVALSHA from then on.
  readonly #sent = new WeakSet<RedisClient>();

  /** @param source The script's source. */
  constructor(source: string) {
    this.source = source;
  }

  /**
   * Run the script on `client` sent whole (`EVAL`), which also loads it: for a call that must
   * never meet `NOSCRIPT` (a client's first reservation after a doubt: the server may have
   * restarted since the script was last sent).
   */
  evalWhole(client: RedisClient, keys: string[], args: string[]): Promise<unknown> {
    this.#sent.add(client);
    return client.eval(this.source, keys, args);
  }

  /** Run the script on `client` with `keys` (every key it touches) and `args`. */
  async run(client: RedisClient, keys: string[], args: string[]): Promise<unknown> {
    if (!this.#sent.has(client)) {
      // Marked when sent: the EVALSHA of a reservation made meanwhile reaches the server after
      // this EVAL on the same connection (10,000 new names at once sent the script once, not
      // 10,000 times); a cluster node that has not seen it answers NOSCRIPT, handled below.
      this.#sent.add(client);
      return await client.eval(this.source, keys, args);
    }
    // Digested when first needed, and awaited at once: a digest started on a script's first
    // (EVAL) call was left pending when a caller ended right after it (a doc test's leak).
    this.#sha ??= crypto.subtle.digest("SHA-1", new TextEncoder().encode(this.source)).then(
      (d) => Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join(""),
    );
    try {
      return await client.evalsha(await this.#sha, keys, args);
    } catch (err) {
      // The reply's code, not any word: Valkey's NOPERM names the user ("User noscript has no
      // permissions to run the 'evalsha' command"), which must not make it send EVAL.
      if (!/(^|: )NOSCRIPT\b/.test(errorMessage(err).replace(/^-/, ""))) throw err;
      return await client.eval(this.source, keys, args);
    }
  }
}

/** True when the server refused to run a script because it has no scripting. */
export function isNoScripting(err: unknown): boolean {
  return /unknown command|not supported|scripting/i.test(errorMessage(err));
}

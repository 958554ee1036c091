/**
 * The `floor` option: the largest ID the user's own data holds, asked before the first
 * reservation and again after a rollback.
 *
 * @module
 */

import { KvIdError } from "../contract/errors.ts";
import { MAX_ID } from "../contract/store.ts";
import { describe } from "../contract/validate.ts";

/**
 * One generator's reading of its `floor` option. Without the option it is 0 and never due
 * ({@linkcode UserFloor.NONE}).
 *
 * @example
 * ```ts
 * import { UserFloor } from "./user_floor.ts";
 * import assert from "node:assert/strict";
 *
 * const floor = new UserFloor(() => 41, "kvid", "order");
 * await floor.read();
 * assert.ok(floor.value === 41n && !floor.due);
 * ```
 */
export class UserFloor {
  /**
   * Without the option: never due, 0, shared by every such generator (nothing changes it: the
   * floor is due again only after a range at or below a value above 0).
   */
  static readonly NONE: UserFloor = new UserFloor(undefined, "", "");
  /** To be asked before the next reservation. */
  due: boolean;
  /** The highest value it returned, 0 before (or without) one. */
  value = 0n;
  readonly #read: (() => bigint | number | Promise<bigint | number>) | undefined;
  readonly #key: string;
  readonly #field: string;

  /**
   * @param read The `floor` option, if given.
   * @param key The counter's hash, named in errors.
   * @param field The counter's field, named in errors.
   */
  constructor(
    read: (() => bigint | number | Promise<bigint | number>) | undefined,
    key: string,
    field: string,
  ) {
    this.#read = read;
    this.due = read !== undefined;
    this.#key = key;
    this.#field = field;
  }

  /** The option is given. */
  get given(): boolean {
    return this.#read !== undefined;
  }

  /**
   * Ask the option for the largest ID the user's data holds; keeps the highest answer.
   *
   * @throws {KvIdError} `"unavailable"` when it failed (retried like a store that is down),
   *   `"config"` when it returned anything but an integer from 0 to 2^63-2.
   */
  async read(): Promise<void> {
    const read = this.#read;
    if (read === undefined) {
      this.due = false;
      return;
    }
    const where = { key: this.#key, field: this.#field };
    let value: unknown;
    try {
      value = await read();
    } catch (cause) {
      // The user's database unreachable: transient, retried like a store that is down.
      throw new KvIdError("unavailable", "the floor option failed", { ...where, cause });
    }
    const floor = typeof value === "number" && Number.isSafeInteger(value)
      ? BigInt(value)
      : typeof value === "bigint"
      ? value
      : undefined;
    if (floor === undefined || floor < 0n || floor >= MAX_ID) {
      throw new KvIdError(
        "config",
        `the floor option returned ${describe(value)}, not an integer from 0 to 2^63-2`,
        where,
      );
    }
    if (floor > this.value) this.value = floor;
    this.due = false;
  }
}

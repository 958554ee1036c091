/**
 * {@linkcode withCodec}: a generator whose `next()` returns the public form of its IDs.
 *
 * @module
 */

import { KvIdError } from "../contract/errors.ts";
import { type Codec, describeValue } from "./codec.ts";

/**
 * What {@linkcode withCodec} wraps: a `KvId` (number or bigint mode), a `DailyId` of
 * `number` or `bigint` format, or anything with the same two methods.
 *
 * @example
 * ```ts
 * import type { IdSource } from "@kvid/core/codec";
 *
 * let last = 0;
 * const counter: IdSource<number> = {
 *   next: () => Promise.resolve(++last),
 *   nextBatch: (n) => Promise.resolve(Array.from({ length: n }, () => ++last)),
 * };
 * ```
 */
export interface IdSource<R extends number | bigint> {
  /** The counter's hash, named in errors if present. */
  readonly key?: string;
  /** The generator's name, named in errors if present. */
  readonly name?: string;
  /** The next raw ID. */
  next(): Promise<R>;
  /** `count` raw IDs. */
  nextBatch(count: number): Promise<R[]>;
}

/**
 * An ID and its public form, from {@linkcode EncodedIds.nextPair}.
 *
 * @example
 * ```ts
 * import type { EncodedId } from "@kvid/core/codec";
 *
 * const row: EncodedId<string, number> = { id: 1001, encoded: "1" + "0".repeat(12) }; // say
 * // INSERT INTO orders (id, order_no) VALUES (row.id, row.encoded)
 * ```
 */
export interface EncodedId<T, R extends number | bigint> {
  /** The raw ID: the primary key. */
  id: R;
  /** Its public form. */
  encoded: T;
}

/**
 * The raw ID type of a generator: `number` for a `KvId` in number mode, `bigint` in bigint mode.
 *
 * @example
 * ```ts
 * import type { IdSource, RawId } from "@kvid/core/codec";
 *
 * const id: RawId<IdSource<bigint>> = 42n;
 * ```
 */
export type RawId<G> = G extends IdSource<infer R> ? R : never;

/**
 * A generator handing out the public form of its IDs; from {@linkcode withCodec}.
 *
 * @example
 * ```ts
 * import type { EncodedIds, IdSource } from "@kvid/core/codec";
 *
 * // What an order's row gets: both forms of one ID.
 * async function newOrderRow(ORDER_NO: EncodedIds<string, IdSource<number>>) {
 *   const { id, encoded } = await ORDER_NO.nextPair();
 *   return { id, order_no: encoded };
 * }
 * ```
 */
export interface EncodedIds<T, G extends IdSource<number | bigint>> {
  /** The generator of raw IDs, as given (close it as usual). */
  readonly generator: G;
  /** The public form. */
  readonly codec: Codec<T>;
  /** The public form of the next ID. */
  next(): Promise<T>;
  /** The public forms of `count` IDs, in the generator's order. */
  nextBatch(count: number): Promise<T[]>;
  /** The next ID and its public form: the raw one for the primary key, the other to show. */
  nextPair(): Promise<EncodedId<T, RawId<G>>>;
  /** The ID of a public form (a `"malformed"` {@linkcode KvIdError} if it is not one). */
  decode(encoded: T): bigint;
}

class Encoded<T, G extends IdSource<number | bigint>> implements EncodedIds<T, G> {
  constructor(readonly generator: G, readonly codec: Codec<T>) {}

  async next(): Promise<T> {
    const id = await this.generator.next();
    return this.#encode(id);
  }

  async nextBatch(count: number): Promise<T[]> {
    const ids = await this.generator.nextBatch(count);
    const out = new Array<T>(ids.length);
    for (let i = 0; i < ids.length; i++) out[i] = this.#encode(ids[i]);
    return out;
  }

  async nextPair(): Promise<EncodedId<T, RawId<G>>> {
    const id = await this.generator.next() as RawId<G>;
    return { id, encoded: this.#encode(id) };
  }

  decode(encoded: T): bigint {
    return this.codec.decode(encoded);
  }

  #encode(id: number | bigint): T {
    try {
      return this.codec.encode(id);
    } catch (err) {
      if (!(err instanceof KvIdError)) throw err;
      // The counter outgrew the public form: say which counter, so the fix (a wider form) is
      // made for the right one. The ID is spent, never reissued.
      const g = this.generator;
      throw new KvIdError(
        err.code,
        `${err.message}: the counter passed what its public form holds; use a wider form`,
        {
          key: typeof g.key === "string" ? g.key : "",
          field: typeof g.name === "string" ? g.name : "",
          cause: err,
        },
      );
    }
  }
}

/**
 * Wrap a generator so that `next()` and `nextBatch()` return the public form of its IDs, and
 * `nextPair()` both: keep the raw ID as the primary key and show the public form.
 *
 * Why both: the raw IDs increase (per process, and as a trend across processes), which keeps
 * B-tree inserts at the right edge of the index; an encrypted form is uniformly scattered, so
 * as a primary key it splits pages like a random UUID does. The raw ID also survives a change
 * of form or a key rotation. Store the public form in an indexed column (or decode it on the way
 * in: `decode` is as fast as `encode`).
 *
 * @param generator A `KvId`, a `DailyId` of `number` or `bigint` format, or an {@linkcode IdSource}.
 * @param codec The public form.
 *
 * @example Order numbers: raw IDs for the database, encrypted ones for customers
 * ```ts ignore
 * import { createClient } from "npm:redis@5";
 * import { fromNodeRedis, KvId, shutdown } from "@kvid/core";
 * import { decimal, encrypted, parseKeys, withCodec } from "@kvid/core/codec";
 *
 * const keys = parseKeys(Deno.env.get("KVID_ID_KEY") ?? "00112233445566778899aabbccddeeff");
 * const ORDER_ID = new KvId("order", {
 *   redis: async () => fromNodeRedis(await createClient({ url: "redis://127.0.0.1:6379" }).connect()),
 * });
 * export const ORDER_NO = withCodec(ORDER_ID, encrypted(decimal(12), { ...keys, tweak: "order" }));
 * const { id, encoded } = await ORDER_NO.nextPair(); // e.g. 1001 and "1" then 12 digits
 * // INSERT INTO orders (id, order_no) VALUES (id, encoded); the customer sees `encoded`
 * console.log(ORDER_NO.decode(encoded) === BigInt(id)); // true: back to the primary key
 * await shutdown();
 * ```
 */
export function withCodec<G extends IdSource<number | bigint>, T>(
  generator: G,
  codec: Codec<T>,
): EncodedIds<T, G> {
  if (
    generator === null || typeof generator !== "object" || typeof generator.next !== "function" ||
    typeof generator.nextBatch !== "function"
  ) {
    throw new TypeError(
      `withCodec: a generator with next() and nextBatch(), got ${describeValue(generator)}`,
    );
  }
  if (
    codec === null || typeof codec !== "object" || typeof codec.encode !== "function" ||
    typeof codec.decode !== "function"
  ) {
    throw new TypeError(`withCodec: a Codec, got ${describeValue(codec)}`);
  }
  return new Encoded(generator, codec);
}

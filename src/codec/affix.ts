/**
 * Fixed text before or after another form: `INV-2026-000123`, `000123-EU`. Zero dependencies.
 *
 * @module
 */

import { type Codec, describeValue, malformed } from "./codec.ts";

function checkAffix(who: string, text: unknown, inner: unknown): asserts text is string {
  if (typeof text !== "string" || text.length === 0) {
    throw new TypeError(`${who}: the text must be a non-empty string, got ${describeValue(text)}`);
  }
  const codec = inner as Codec<string> | null;
  if (
    codec === null || typeof codec !== "object" || typeof codec.encode !== "function" ||
    typeof codec.decode !== "function"
  ) {
    throw new TypeError(`${who}: the inner form must be a Codec, got ${describeValue(inner)}`);
  }
}

/**
 * `text` before the inner form. Decoding requires it and hands the rest to the inner codec.
 *
 * @param text The prefix, e.g. `"INV-2026-"`.
 * @param inner The form after it.
 *
 * @example Invoice numbers with a yearly prefix (and a counter per year)
 * ```ts
 * import { decimal, prefix } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const invoice2026 = prefix("INV-2026-", decimal(6));
 * assert.equal(invoice2026.encode(123), "INV-2026-000123");
 * assert.equal(invoice2026.decode("INV-2026-000123"), 123n);
 * assert.throws(() => invoice2026.decode("INV-2025-000123"), { code: "malformed" });
 * ```
 */
export function prefix(text: string, inner: Codec<string>): Codec<string> {
  checkAffix("prefix", text, inner);
  return {
    max: inner.max,
    encode: (id) => text + inner.encode(id),
    decode: (encoded) => {
      if (typeof encoded !== "string" || !encoded.startsWith(text)) {
        throw malformed(`does not start with ${JSON.stringify(text)}`, encoded);
      }
      return inner.decode(encoded.slice(text.length));
    },
  };
}

/**
 * `text` after the inner form. Decoding requires it and hands the rest to the inner codec.
 *
 * @param text The suffix, e.g. `"-EU"`.
 * @param inner The form before it.
 *
 * @example A region suffix
 * ```ts
 * import { decimal, suffix } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const eu = suffix("-EU", decimal(6));
 * assert.equal(eu.encode(7), "000007-EU");
 * assert.equal(eu.decode("000007-EU"), 7n);
 * ```
 */
export function suffix(text: string, inner: Codec<string>): Codec<string> {
  checkAffix("suffix", text, inner);
  return {
    max: inner.max,
    encode: (id) => inner.encode(id) + text,
    decode: (encoded) => {
      if (typeof encoded !== "string" || !encoded.endsWith(text)) {
        throw malformed(`does not end with ${JSON.stringify(text)}`, encoded);
      }
      return inner.decode(encoded.slice(0, encoded.length - text.length));
    },
  };
}

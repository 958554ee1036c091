/**
 * Public forms of IDs: the same unique IDs written for people and URLs, and back, exactly.
 * Fixed-width decimal, radix 36 and 62, prefixes and suffixes, and a **keyed form** that hides
 * order and volume (FF1 format-preserving encryption, NIST SP 800-38G, on the audited AES of
 * `@noble/ciphers`, this entry point's one dependency; the core has none).
 *
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { decimal, encrypted, parseKeys, withCodec } from "@kvid/core/codec";
 *
 * // KVID_ID_KEY: 32 hex digits from a secret store, e.g. `openssl rand -hex 16`
 * const keys = parseKeys("00112233445566778899aabbccddeeff"); // Deno.env.get("KVID_ID_KEY")
 * const ORDER_ID = new KvId("order"); // raw IDs: 1, 2, 3, ... for the primary key
 * const ORDER_NO = withCodec(ORDER_ID, encrypted(decimal(12), { ...keys, tweak: "order" }));
 * // await ORDER_NO.next()      -> "1" then 12 digits: what the customer sees
 * // await ORDER_NO.nextPair()  -> { id: 1001, encoded: "1..." }: store both
 * ```
 *
 * ## The forms
 *
 * A {@linkcode Codec} maps the IDs of its domain `0..max` to a form and back. Each is a
 * bijection, so the public forms of unique IDs are unique; an ID outside the domain is a
 * `"domain"` {@linkcode KvIdError} (never wrapped round onto another ID), and a string not of
 * the form is `"malformed"`, naming what is wrong (length, character, prefix, key identifier).
 *
 * | form                                          | example of ID 1,000,000 | gives                                            | does not give                                      |
 * | --------------------------------------------- | ----------------------- | ------------------------------------------------ | -------------------------------------------------- |
 * | `decimal(12)`                                 | `000001000000`          | fixed width, sorts like the ID                   | hides nothing: reveals order and volume            |
 * | `base36(8)` (`0-9a-z`)                        | `0000lfls`              | shorter, one case (read aloud, type)             | hides nothing                                      |
 * | `base62()` (`0-9A-Za-z`, ASCII order)         | `4C92`                  | shortest, URL-safe; fixed width sorts like the ID | hides nothing; case-sensitive                      |
 * | `prefix("INV-2026-", decimal(6))`, `suffix`   | `INV-2026-...`          | readable kinds and years                         | -                                                  |
 * | `encrypted(decimal(12), { keys })`            | `1` + 12 digits         | reveals neither order nor volume without the key | trend-increasing order; authentication             |
 * | `offset(100_000n, decimal(6))`                | `100001` for ID 1       | numbers that start at a given value              | hides nothing                                      |
 * | `dailyForm(format, digits)`, `dayForm`        | `20261130000001`        | `DailyId`'s forms (its `codec`; a day's serials) | hides nothing: shows the date and the day's volume |
 *
 * Alphabets: {@linkcode DECIMAL}, {@linkcode BASE36} (lowercase, decoded strictly) and
 * {@linkcode BASE62} (`0-9`, `A-Z`, `a-z`: ASCII order, so fixed-width strings sort like their
 * IDs); {@linkcode radix} takes any alphabet of 2 to 128 ASCII characters. Without a width, a
 * positional form is the shortest (no leading zero: one string per ID).
 *
 * ## The keyed form
 *
 * {@linkcode encrypted} encrypts the ID with FF1 over the inner form's radix and width, then
 * writes the key identifier before it: `encrypted(decimal(12), ...)` maps the IDs 0 to
 * 10^12 - 1 one-to-one onto 12-digit strings, after a one-character key identifier. What it
 * gives and what not, plainly:
 *
 * - **Not guessable, no volume**: consecutive IDs map to unrelated-looking outputs; without the
 *   key nobody can tell their order or how many were issued between two of them (as strong as
 *   FF1 with AES; the domain is at least NIST's 10^6 values, and the wider the better).
 * - **Unique, reversible**: a permutation, not a hash: no two IDs share an output; the key
 *   decodes it exactly (`decode`), so you can look a row up by its raw ID.
 * - **Not trend-increasing**: the outputs are scattered uniformly. Keep the raw ID as the
 *   primary key (B-tree inserts stay at the right edge) and show, or index, the public form:
 *   {@linkcode withCodec}'s `nextPair()` gives both.
 * - **Not authenticated**: any string of the form decodes to some ID. A guessed public ID hits a
 *   real one with the probability (IDs issued) / (domain size): check the row exists and
 *   belongs to the caller; a wider form makes a hit rarer.
 * - **Bounded**: the domain is fixed. A counter past `max` fails with `"domain"` (the wrapper
 *   names the counter); choose the width for the lifetime of the counter.
 * - **Key rotation**: every output starts with its key identifier (a character of the alphabet).
 *   Add the new key under a new identifier and make it `current`; IDs shown with the old key
 *   keep decoding as long as its key stays in the ring. An unknown identifier is `"malformed"`.
 *   Encoded again after a rotation, an ID gets a second form (both decode to it): store the
 *   form shown once, when the row is made, rather than re-encoding old IDs.
 * - **Tweak**: use the generator's name (`tweak: "order"`), so the same key gives every name its
 *   own permutation.
 * - **The key is a secret**: from the environment (`KVID_ID_KEY`, in hex) or a secret store,
 *   never in a URL, a log or the repository. {@linkcode parseKeys} reads `<hex>` (key id `"1"`)
 *   or `2:<hex>,1:<hex>` (the first is current); its errors name lengths, never key material.
 *
 * Sqids and Hashids shuffle an alphabet with a public algorithm: they make IDs short, not
 * secret (their authors say so). CosId's converters (radix, padding, prefix, suffix, date
 * prefix) are these plain forms; none of them is keyed.
 *
 * ## Use cases
 *
 * Order numbers that do not reveal the daily volume: 13 digits, the key identifier first.
 *
 * ```ts
 * import { decimal, encrypted } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const key = crypto.getRandomValues(new Uint8Array(16)); // from KVID_ID_KEY in production
 * const orderNo = encrypted(decimal(12), { keys: { "1": key }, tweak: "order" });
 * const shown = orderNo.encode(1001); // "1" + 12 digits
 * assert.match(shown, /^1\d{12}$/);
 * assert.equal(orderNo.decode(shown), 1001n);
 * ```
 *
 * Invoice numbers with a yearly prefix: a counter per year (so numbers restart each year), its
 * year in front, fixed width. Plain on purpose: invoice numbers are expected to count up.
 *
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { decimal, prefix, withCodec } from "@kvid/core/codec";
 *
 * const year = new Date().getUTCFullYear();
 * const INVOICE_NO = withCodec(
 *   new KvId(`invoice:${year}`),
 *   prefix(`INV-${year}-`, decimal(6)),
 * );
 * // await INVOICE_NO.next() -> "INV-2026-000001", "INV-2026-000002", ...
 * await INVOICE_NO.generator.close();
 * ```
 *
 * Short share links: 8 URL-safe characters (a key identifier and 7 of radix 62, 3.5 * 10^12
 * IDs) that reveal neither how many links exist nor the neighbours of one.
 *
 * ```ts
 * import { base62, encrypted } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const key = crypto.getRandomValues(new Uint8Array(16));
 * const share = encrypted(base62(7), { keys: { a: key }, tweak: "share" });
 * const slug = share.encode(42); // e.g. https://example.com/s/<slug>
 * assert.match(slug, /^a[0-9A-Za-z]{7}$/);
 * assert.equal(share.decode(slug), 42n);
 * ```
 *
 * ## Costs
 *
 * The plain forms cost a fraction of a microsecond per ID; the keyed one is ten AES blocks per
 * ID, less than Sqids' encode. `bench/codec_bench.ts` measures them beside `next()` and Sqids on
 * the same IDs; figures in bench/RESULTS.md. Negligible beside a database write; in a loop of
 * millions, work on the raw IDs.
 *
 * ## Where it plugs in
 *
 * - In code: {@linkcode withCodec} around a `KvId` or `DailyId` (`next`, `nextBatch`,
 *   `nextPair`, `decode`); `DailyId`'s own `codec` composes like any other.
 * - The CLI: `kvid encode` and `kvid decode` (`@kvid/core/cli`), the key from `KVID_ID_KEY`,
 *   values as arguments or one a line on standard input.
 * - The service (`@kvid/core/server`): `KVID_FORMATS="order=decimal:12:encrypted"` (see
 *   {@linkcode parseForms}) with the key in `KVID_ID_KEY`, or the `codecs` option of
 *   `createHandler`: `/v1/ids/order` then answers each raw ID with its public form.
 *
 * @module
 */

export { asBigInt, asNumber, checkId, type Codec, MAX_ID, offset } from "./codec.ts";
export { BASE36, base36, BASE62, base62, DECIMAL, decimal, maxWidth, radix } from "./radix.ts";
export type { RadixCodec } from "./radix.ts";
export { prefix, suffix } from "./affix.ts";
export { dailyForm, dayForm } from "./daily.ts";
export {
  encrypted,
  type EncryptedCodec,
  type EncryptedOptions,
  type Keyring,
  parseKeys,
} from "./encrypted.ts";
export { Ff1 } from "./ff1.ts";
export { parseForms } from "./forms.ts";
export {
  type EncodedId,
  type EncodedIds,
  type IdSource,
  type RawId,
  withCodec,
} from "./with_codec.ts";

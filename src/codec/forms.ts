/**
 * Public forms by name from one line of text, as the service reads them from `KVID_FORMATS`.
 *
 * @module
 */

import type { Codec } from "./codec.ts";
import { encrypted, type Keyring } from "./encrypted.ts";
import { base36, base62, decimal, type RadixCodec } from "./radix.ts";

const KINDS: Record<string, (width?: number) => RadixCodec> = { decimal, base36, base62 };

/**
 * Read `name=form[:width][:encrypted],...`: a public form per generator name, e.g.
 * `"order=decimal:12:encrypted,share=base62:7:encrypted,invoice=decimal:8"`. A form is
 * `decimal`, `base36` or `base62`; `encrypted` (which needs a width and `keys`) is the keyed form
 * with the name as its tweak. Names here cannot hold `=` or `,`.
 *
 * @param text The forms.
 * @param keys The keys of the `encrypted` forms (e.g. `parseKeys` of `KVID_ID_KEY`).
 *
 * @example
 * ```ts
 * import { parseForms, parseKeys } from "@kvid/core/codec";
 * import assert from "node:assert/strict";
 *
 * const forms = parseForms(
 *   "order=decimal:12:encrypted,invoice=decimal:8",
 *   parseKeys("00112233445566778899aabbccddeeff"),
 * );
 * assert.match(forms.get("order")!.encode(1), /^1\d{12}$/);
 * assert.equal(forms.get("invoice")!.encode(1), "00000001");
 * ```
 */
export function parseForms(text: string, keys?: Keyring): Map<string, Codec<string>> {
  const forms = new Map<string, Codec<string>>();
  for (const item of text.split(",")) {
    if (item.trim() === "") continue;
    const eq = item.lastIndexOf("=");
    const name = item.slice(0, eq).trim();
    const spec = item.slice(eq + 1).trim();
    if (eq < 1 || name === "") {
      throw new TypeError(`forms: ${JSON.stringify(item)} is not name=form`);
    }
    if (forms.has(name)) throw new TypeError(`forms: ${JSON.stringify(name)} given twice`);
    const [kind, ...rest] = spec.split(":");
    const make = Object.hasOwn(KINDS, kind) ? KINDS[kind] : undefined;
    if (make === undefined) {
      throw new TypeError(
        `forms: ${JSON.stringify(name)}: the form must be decimal, base36 or base62, got ${
          JSON.stringify(kind)
        }`,
      );
    }
    let width: number | undefined;
    let keyed = false;
    for (const part of rest) {
      if (part === "encrypted") keyed = true;
      else if (/^[1-9]\d*$/.test(part) && width === undefined) width = Number(part);
      else {throw new TypeError(
          `forms: ${JSON.stringify(name)}: unexpected ${JSON.stringify(part)}`,
        );}
    }
    const inner = make(width);
    if (!keyed) {
      forms.set(name, inner);
      continue;
    }
    if (keys === undefined) {
      throw new TypeError(
        `forms: ${JSON.stringify(name)} is encrypted but no key is given (KVID_ID_KEY)`,
      );
    }
    forms.set(name, encrypted(inner, { ...keys, tweak: name }));
  }
  return forms;
}

/**
 * The keyed form is injective on 10 million consecutive IDs of its real domain (12 decimal
 * digits). FF1 is a permutation by construction; this checks the implementation at scale.
 *
 * Slow: each ID is ten AES blocks; with both cores of the reference machine busy (load 8 to 17)
 * it took 4 to 6 minutes (24 to 32 µs per ID). The suite runs every ID of a 6-digit domain
 * exhaustively instead (codec_test.ts); this one runs with `KVID_SLOW=1`:
 *
 * ```sh
 * KVID_SLOW=1 deno test -A tests/codec/codec_slow_test.ts
 * ```
 *
 * Memory is bounded: the outputs, below 10^12, are kept as doubles (exact) in one 80 MB
 * Float64Array, sorted, and adjacent values compared.
 */

import { setTestLimit } from "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { decimal, encrypted } from "../../src/codec/mod.ts";

const COUNT = 10_000_000;
const slow = Deno.env.get("KVID_SLOW") === "1";

// 4-6 minutes by design (ignored unless KVID_SLOW=1): 20 minutes turns a hang into a failure.
setTestLimit(20 * 60_000);

Deno.test({
  name: slow
    ? "the keyed form: 10 million consecutive IDs of a 12-digit domain, no collision"
    : "the keyed form: 10 million consecutive IDs, no collision (slow: set KVID_SLOW=1)",
  ignore: !slow,
  fn() {
    const key = Uint8Array.from({ length: 16 }, (_, i) => (i * 29 + 3) & 255);
    const codec = encrypted(decimal(12), { keys: { "1": key }, tweak: "order" });
    const first = 123_456_789; // a counter some way into its life
    const outs = new Float64Array(COUNT);
    const started = performance.now();
    for (let i = 0; i < COUNT; i++) {
      const text = codec.encode(first + i);
      if (text.length !== 13 || text[0] !== "1") assert.fail(`ID ${first + i}: ${text}`);
      outs[i] = Number(text.slice(1));
    }
    const encoded = performance.now();
    outs.sort();
    for (let i = 1; i < COUNT; i++) {
      if (outs[i] === outs[i - 1]) assert.fail(`two IDs share the output ${outs[i]}`);
    }
    assert.ok(outs[0] >= 0 && outs[COUNT - 1] < 1e12);
    console.log(
      `10M encodes in ${((encoded - started) / 1000).toFixed(1)} s (${
        ((encoded - started) * 1e6 / COUNT).toFixed(0)
      } ns each), sorted and compared in ${((performance.now() - encoded) / 1000).toFixed(1)} s`,
    );
  },
});

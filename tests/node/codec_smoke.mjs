// The bundle of @kvid/core/codec (with @noble/ciphers inside) on Node or Bun: NIST's FF1 sample 1
// and round trips of the keyed and plain forms. Usage: node codec_smoke.mjs codec.mjs
import assert from "node:assert/strict";

const codec = await import(new URL(process.argv[2], `file://${process.cwd()}/`).href);
const hex = (s) => Uint8Array.from(s.match(/../g), (b) => parseInt(b, 16));
const ff1 = new codec.Ff1(hex("2B7E151628AED2A6ABF7158809CF4F3C"), 10, 10);
assert.equal(ff1.encrypt(123456789n), 2433477484n); // PT 0123456789 -> CT 2433477484
const orderNo = codec.encrypted(codec.decimal(12), {
  ...codec.parseKeys("000102030405060708090a0b0c0d0e0f"),
  tweak: "order",
});
const seen = new Set();
for (let id = 0; id < 1000; id++) {
  const text = orderNo.encode(id);
  assert.match(text, /^1\d{12}$/);
  assert.equal(orderNo.decode(text), BigInt(id));
  seen.add(text);
}
assert.equal(seen.size, 1000);
assert.equal(codec.base62().encode(1_000_000), "4C92");
console.log(
  `codec: NIST FF1 sample 1 and 1000 round trips ok (${
    typeof Bun === "object" ? "Bun" : "Node"
  } ${process.version})`,
);

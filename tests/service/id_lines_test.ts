/**
 * The ID service's text body: exactly what `${id}\n` prints for each ID, numbers and bigints,
 * at every digit boundary and at the edges of the safe range.
 *
 * @module
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { idLines } from "../../src/service/id_lines.ts";

const plain = (ids: readonly (number | bigint | string)[]) => ids.map((id) => `${id}\n`).join("");

Deno.test("idLines: as `${id}\\n` at digit and thousand boundaries, and the safe range's ends", () => {
  const edges: number[] = [];
  for (let p = 1; p <= Number.MAX_SAFE_INTEGER; p *= 10) {
    for (let d = -3; d <= 3; d++) if (p + d >= 0) edges.push(p + d);
  }
  for (let i = 0; i < 2100; i++) edges.push(i, 1_000_000 + i);
  edges.push(Number.MAX_SAFE_INTEGER - 2, Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER);
  assert.equal(idLines(edges), plain(edges));
});

Deno.test("idLines: runs that cross a thousand, mixed with bigints and gaps", () => {
  const ids: (number | bigint)[] = [];
  for (let i = 0; i < 50; i++) ids.push(9_007_199_254_739_980 + i); // across ...740,000
  ids.push(2n ** 53n + 1n, 2n ** 63n - 1n, 5, 999, 1000, 1001, 123_456_999, 123_457_000, 0);
  assert.equal(idLines(ids), plain(ids));
  assert.equal(idLines([]), "");
});

Deno.test("idLines: random safe integers and their neighbours", () => {
  let seed = 12345;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const ids: number[] = [];
  for (let i = 0; i < 10_000; i++) {
    const x = Math.floor(random() * 2 ** 53) - 2;
    for (const y of [x, x + 1, x + 2]) if (y >= 0 && Number.isSafeInteger(y)) ids.push(y);
  }
  assert.equal(idLines(ids), plain(ids));
});

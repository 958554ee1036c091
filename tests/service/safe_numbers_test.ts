/**
 * The service makes and prints IDs below 2^53 as numbers (cheaper than bigints) and above it
 * as bigints: every ID exact across the boundary, on a real Redis whose counter is raised past
 * 2^53 with HSET between requests.
 *
 * @module
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { openClient } from "../support/redis_clients.ts";
import { command, startServer } from "../support/redis_server.ts";
import { serveService } from "../support/service.ts";

const TOKEN = "test-token-safe-numbers-0123";

async function idsOf(base: string, path: string, json = false): Promise<string[]> {
  const res = await fetch(base + path, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, ...(json ? { accept: "application/json" } : {}) },
  });
  const body = await res.text();
  assert.equal(res.status, 200, body);
  return json ? JSON.parse(body).ids : body.split("\n").slice(0, -1);
}

/** `count` consecutive decimal IDs from `first`, computed in bigints. */
function run(first: bigint, count: number): string[] {
  return Array.from({ length: count }, (_, i) => String(first + BigInt(i)));
}

Deno.test("service: IDs exact below, across and above 2^53 (counter raised with HSET)", async () => {
  await using server = await startServer();
  await using client = await openClient("node-redis", server.url);
  await using s = serveService({ redis: client.redis, tokens: `${TOKEN}:*` });
  const safe = 2n ** 53n - 1n;
  // Small IDs first: the generator serves numbers, then the counter jumps.
  assert.deepEqual(await idsOf(s.url, "/v1/ids/cross?count=3"), ["1", "2", "3"]);
  // A new name starting 50 below the last safe integer: 100 IDs run across it, in one
  // reservation, then in the segments after.
  await command(server.url, "HSET", "kvid", "edge", String(safe - 50n));
  const text = await idsOf(s.url, "/v1/ids/edge?count=100");
  assert.deepEqual(text, run(safe - 49n, 100));
  const json = await idsOf(s.url, "/v1/ids/edge?count=100", true);
  assert.deepEqual(json, run(safe + 51n, 100));
  // The counter of a name already served as numbers raised to just below 2^63: exact there too
  // (the segment buffered before the HSET runs out first: ask past it).
  await command(server.url, "HSET", "kvid", "cross", String(2n ** 63n - 20_000n));
  const after = await idsOf(s.url, "/v1/ids/cross?count=10000");
  const high = after.filter((id) => BigInt(id) > safe);
  assert.ok(high.length > 0, "no ID from the raised counter");
  assert.deepEqual(high, run(BigInt(high[0]), high.length));
  assert.ok(BigInt(high[0]) > 2n ** 63n - 20_000n, high[0]);
  const low = after.slice(0, after.length - high.length);
  assert.deepEqual(low, run(4n, low.length));
});

/**
 * Unit tests of the `floor` option's reading (src/engine/user_floor.ts): what it accepts, what
 * it refuses and with which code, and that its value only rises. The generator's use of it
 * against a real server is in tests/stores/redis/redis_losses_test.ts and tests/engine/edge_cases_audit_test.ts. Starts no
 * server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvIdError } from "../../src/contract/errors.ts";
import { MAX_ID } from "../../src/contract/store.ts";
import { UserFloor } from "../../src/engine/user_floor.ts";

Deno.test("UserFloor: without the option, never due, 0, not given", async () => {
  const none = new UserFloor(undefined, "kvid", "order");
  assert.equal(none.due, false);
  assert.equal(none.given, false);
  none.due = true;
  await none.read();
  assert.equal(none.due, false);
  assert.equal(none.value, 0n);
  assert.equal(UserFloor.NONE.due, false);
  assert.equal(UserFloor.NONE.given, false);
});

Deno.test("UserFloor: due before the first read, the highest answer kept", async () => {
  const answers: (bigint | number)[] = [41, 100n, 50, 100, 0];
  const floor = new UserFloor(() => Promise.resolve(answers.shift()!), "kvid", "order");
  assert.equal(floor.due, true);
  assert.equal(floor.given, true);
  await floor.read();
  assert.equal(floor.value, 41n);
  assert.equal(floor.due, false);
  for (const want of [100n, 100n, 100n, 100n]) {
    floor.due = true;
    await floor.read();
    assert.equal(floor.value, want);
    assert.equal(floor.due, false);
  }
});

Deno.test("UserFloor: the largest ID accepted is 2^63-2; 0 is accepted", async () => {
  const top = new UserFloor(() => MAX_ID - 1n, "kvid", "order");
  await top.read();
  assert.equal(top.value, MAX_ID - 1n);
  const zero = new UserFloor(() => 0, "kvid", "order");
  await zero.read();
  assert.equal(zero.value, 0n);
  const safe = new UserFloor(() => Number.MAX_SAFE_INTEGER, "kvid", "order");
  await safe.read();
  assert.equal(safe.value, BigInt(Number.MAX_SAFE_INTEGER));
});

Deno.test("UserFloor: anything but an integer from 0 to 2^63-2 is a config error, still due", async () => {
  for (const bad of [-1, -1n, MAX_ID, MAX_ID + 1n, 1.5, 2 ** 53, NaN, "7", null, undefined]) {
    const floor = new UserFloor(() => bad as number, "kvid", "order");
    const err = await floor.read().then(() => undefined, (e) => e);
    assert.ok(err instanceof KvIdError, `accepted ${String(bad)}`);
    assert.equal(err.code, "config");
    assert.match(err.message, /floor option returned/);
    assert.equal(err.key, "kvid");
    assert.equal(err.field, "order");
    assert.equal(floor.value, 0n);
    assert.equal(floor.due, true, "asked again next time");
  }
});

Deno.test("UserFloor: an option that fails is unavailable (transient), with its cause", async () => {
  const cause = new Error("database down");
  for (
    const read of [() => Promise.reject(cause), () => {
      throw cause;
    }]
  ) {
    const floor = new UserFloor(read, "kvid", "order");
    const err = await floor.read().then(() => undefined, (e) => e);
    assert.ok(err instanceof KvIdError);
    assert.equal(err.code, "unavailable");
    assert.equal(err.cause, cause);
    assert.equal(err.field, "order");
    assert.equal(floor.due, true);
  }
});

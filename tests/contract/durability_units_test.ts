/**
 * Unit tests of src/contract/durability.ts: the durability options refused with words that
 * name them, the library's opt-out reworded for the service and the CLI, and the members' reads
 * merged (a member's "loses IDs without a crash" kept whatever the others say). Starts no server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import {
  checkDurabilityOptions,
  LIBRARY_OPT_OUT,
  mergeDurability,
  refusalWith,
} from "../../src/contract/durability.ts";

Deno.test("checkDurabilityOptions: a mode of two words and settings of strings, or nothing", () => {
  for (const mode of [undefined, "strict", "best-effort"]) checkDurabilityOptions("KvId", mode, {});
  checkDurabilityOptions("KvId", undefined, undefined);
  checkDurabilityOptions("KvId", "strict", { appendonly: "yes", "appendfsync": "always" });
  assert.throws(() => checkDurabilityOptions("KvId", "lax", undefined), {
    name: "TypeError",
    message: 'KvId option durability must be "strict" or "best-effort", got "lax"',
  });
  assert.throws(
    () => checkDurabilityOptions("RedisStore", "x".repeat(100), undefined),
    {
      message: `RedisStore option durability must be "strict" or "best-effort", got "${
        "x".repeat(40)
      }"`,
    },
  );
  assert.throws(() => checkDurabilityOptions("KvId", 1, undefined), /got number$/);
  assert.throws(() => checkDurabilityOptions("KvId", null, undefined), /got object$/);
  for (const settings of [null, "yes", 5, ["yes"]]) {
    assert.throws(
      () => checkDurabilityOptions("KvId", undefined, settings),
      { name: "TypeError", message: "KvId option serverSettings must be an object of strings" },
      String(settings),
    );
  }
  assert.throws(
    () => checkDurabilityOptions("KvId", "strict", { appendonly: "yes", appendfsync: 1 }),
    { name: "TypeError", message: "KvId option serverSettings.appendfsync must be a string" },
  );
});

Deno.test("refusalWith: the library's opt-out named as the caller's", () => {
  assert.equal(LIBRARY_OPT_OUT, 'durability: "best-effort"');
  const err = new Error(`can lose IDs. Fix the server, or accept the loss with ${LIBRARY_OPT_OUT}`);
  assert.equal(
    refusalWith(err, "KVID_DURABILITY=best-effort"),
    "can lose IDs. Fix the server, or accept the loss with KVID_DURABILITY=best-effort",
  );
  assert.equal(refusalWith(new Error("other words"), "--durability best-effort"), "other words");
});

Deno.test("mergeDurability: durable when no member has a problem; each member's own words", () => {
  assert.deepEqual(mergeDurability([]), {
    durable: true,
    settings: {},
    problems: [],
    lossWithoutCrash: false,
  });
  const merged = mergeDurability([
    { durable: true, settings: { appendonly: "yes" }, problems: [] },
    undefined,
    {
      durable: false,
      settings: { appendonly: "no", save: "" },
      problems: ["appendonly is off", "no snapshots"],
      lossWithoutCrash: false,
    },
  ]);
  assert.deepEqual(merged, {
    durable: false,
    settings: {
      "0.appendonly": "yes",
      "1.probe": "not yet (unreachable; probed at its next use)",
      "2.appendonly": "no",
      "2.save": "",
    },
    problems: ["server 2: appendonly is off", "server 2: no snapshots"],
    lossWithoutCrash: false,
  });
  // A member that loses IDs without a crash keeps saying so, before or after the others.
  const lossy = { durable: false, settings: {}, problems: ["evicts"], lossWithoutCrash: true };
  const fine = { durable: true, settings: {}, problems: [], lossWithoutCrash: false };
  assert.equal(mergeDurability([lossy, fine]).lossWithoutCrash, true);
  assert.equal(mergeDurability([fine, lossy]).lossWithoutCrash, true);
  assert.equal(mergeDurability([fine, undefined]).durable, true, "a member not read yet");
  assert.equal(mergeDurability([{ ...fine, durable: false }]).durable, true, "problems decide");
});

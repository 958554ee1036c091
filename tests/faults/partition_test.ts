/**
 * Network partitions under Sentinel (see `partition.ts`): 1 primary P, replicas R1 and R2, 3
 * Sentinels (quorum 2, `down-after-milliseconds 1000`) and two clients A and B through
 * node-redis `createSentinel`, each on its own loopback address in a private network
 * namespace, with `nft` rules as the partitions. Every ID every generator got is checked:
 * unique across all of them, increasing per generator.
 *
 * The controls (`replicas: 0`, and `replicas: 1` of 2 replicas accepted with `durability:
 * "best-effort"`) must re-issue IDs: they show the harness bites. The nemesis' seed is
 * `KVID_PARTITION_SEED` or random, and printed on failure.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import {
  check,
  type Outcome,
  partitionsMissing,
  runScenario,
  type Scenario,
} from "../support/partition.ts";
import { redisBinaryMissing } from "../support/redis_server.ts";

const missing = partitionsMissing() ??
  (redisBinaryMissing() ? "the test server binary is not on PATH" : undefined);
const ignore = missing !== undefined;
const suffix = ignore ? ` (ignored: ${missing})` : "";

async function scenario(s: Scenario): Promise<{ outcome: Outcome; text: string }> {
  const outcome = await runScenario(s);
  const v = check(outcome);
  const text = `${s.kind}, replicas ${s.replicas}${
    s.options ? ` ${JSON.stringify(s.options)}` : ""
  }, seed ${s.seed}: ${v.reissued} of ${v.ids} IDs re-issued (first ${
    v.sample.join(", ")
  }), errors ${JSON.stringify(v.errors)}\n  ${outcome.events.join("\n  ")}`;
  assert.deepEqual(v.notIncreasing, [], `IDs not increasing per generator: ${text}`);
  return { outcome, text };
}

async function expect(s: Scenario, reissues: boolean): Promise<void> {
  const { outcome, text } = await scenario(s);
  const v = check(outcome);
  if (reissues) assert.ok(v.reissued > 0, `control: the split must re-issue IDs: ${text}`);
  else assert.equal(v.reissued, 0, `no ID handed out twice: ${text}`);
  console.log(`${reissues ? "control: " : ""}${text.split("\n")[0]}`);
}

const best = { durability: "best-effort" };
const seed = Number(Deno.env.get("KVID_PARTITION_SEED") ?? Math.floor(Math.random() * 2 ** 31));

Deno.test({
  name:
    `partition {P R1 A} | {R2 Sentinels B}, A closed before the heal: control, replicas 0 re-issues${suffix}`,
  ignore,
}, () => expect({ kind: "split-closed", replicas: 0, seed: 0, options: best }, true));

Deno.test({
  name:
    `partition {P R1 A} | {R2 Sentinels B}, A closed before the heal: control, replicas 1 of 2 (best-effort) re-issues${suffix}`,
  ignore,
}, () => expect({ kind: "split-closed", replicas: 1, seed: 0, options: best }, true));

Deno.test({
  name:
    `partition {P R1 A} | {R2 Sentinels B}, A closed before the heal: replicas 2 never re-issues${suffix}`,
  ignore,
}, () => expect({ kind: "split-closed", replicas: 2, seed: 0 }, false));

Deno.test({
  name: `partition {P R1 A} | {R2 Sentinels B}, A live: replicas 2 never re-issues${suffix}`,
  ignore,
}, () => expect({ kind: "split-live", replicas: 2, seed: 0 }, false));

Deno.test({
  name: `partition nemesis, seed 1: control, replicas 0 re-issues${suffix}`,
  ignore,
}, () => expect({ kind: "nemesis", replicas: 0, seed: 1, options: best }, true));

Deno.test({
  name: `partition nemesis (seeded): replicas 2 never re-issues${suffix}`,
  ignore,
}, () => expect({ kind: "nemesis", replicas: 2, seed }, false));

Deno.test({
  name:
    `partition: P cut from its replicas, A's connection killed while WAIT 2 is pending: no ID served unconfirmed${suffix}`,
  ignore,
}, () => expect({ kind: "resent-wait", replicas: 2, seed: 0 }, false));

Deno.test(
  {
    name:
      `partition: P cut from its replicas, A's connection killed while WAIT 2 is pending: control, a client that cannot name its connection serves unconfirmed IDs${suffix}`,
    ignore,
  },
  () => expect({ kind: "resent-wait", replicas: 2, seed: 0, unchecked: true, options: best }, true),
);

Deno.test({
  name:
    `partition nemesis over HttpStore clients, the service and its Redis (seeded): no duplicate, every call settles${suffix}`,
  ignore,
}, async () => {
  const { outcome, text } = await scenario({ kind: "http-nemesis", replicas: 0, seed });
  const v = check(outcome);
  assert.equal(v.reissued, 0, `no ID handed out twice: ${text}`);
  assert.equal(v.errors.unsettled, undefined, `a call outlived its timeout: ${text}`);
  assert.ok(v.ids > 0, `no ID at all: ${text}`);
  console.log(text.split("\n")[0]);
});

Deno.test({
  name: `partition {P R1 A} | {R2 Sentinels B}: replicas 1 of 2 is refused under strict${suffix}`,
  ignore,
}, async () => {
  const { outcome, text } = await scenario({ kind: "split-closed", replicas: 1, seed: 0 });
  const v = check(outcome);
  assert.equal(v.ids, 0, `a refused generator served IDs: ${text}`);
  assert.ok((v.errors.config ?? 0) > 0, `no config error: ${text}`);
  const messages = outcome.generators.flatMap((g) => Object.keys(g.errors)).join("; ");
  assert.match(messages, /could be issued twice: the primary has 2/);
});

const pgBin = Deno.env.get("KVID_PG_BIN") ?? "/usr/lib/postgresql/15/bin";
const pgMissing = missing ?? (() => {
  try {
    Deno.statSync(`${pgBin}/postgres`);
    return undefined;
  } catch {
    return `no PostgreSQL at ${pgBin}`;
  }
})();
const pgSuffix = pgMissing === undefined ? "" : ` (ignored: ${pgMissing})`;

Deno.test({
  name:
    `partition: PostgreSQL standby cut off and promoted while A commits on the old primary: control, asynchronous replication re-issues${pgSuffix}`,
  ignore: pgMissing !== undefined,
}, () => expect({ kind: "pg-split", replicas: 0, seed: 0, options: { sync: false } }, true));

Deno.test({
  name:
    `partition: PostgreSQL standby cut off and promoted while A commits on the old primary: synchronous replication never re-issues${pgSuffix}`,
  ignore: pgMissing !== undefined,
}, () => expect({ kind: "pg-split", replicas: 0, seed: 0, options: { sync: true } }, false));

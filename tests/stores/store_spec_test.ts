/**
 * Every store of tests/support/store_subjects.ts that needs no SQL server runs the shared spec
 * (tests/support/store_spec.ts): the in-memory reference store, Redis through both npm clients
 * (Valkey too, when `.ci/run` runs this file again with `KVID_TEST_SERVER=valkey-server`), a Redis
 * server without scripting, interleaved Redis servers, interleaved Redis and Deno KV, Deno KV on a
 * file. The SQL subjects run it in tests/stores/sql/sql_store_spec_test.ts; `HttpStore` in
 * tests/client/http_store_test.ts.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import { runStoreSpec } from "../support/store_spec.ts";
import { SUBJECTS, SubjectServers } from "../support/store_subjects.ts";

for (const subject of SUBJECTS.filter((s) => s.group !== "sql")) {
  const unavailable = subject.notSpec ?? subject.unavailable?.();
  Deno.test({
    name: `store spec: ${subject.name}${unavailable ? ` (ignored: ${unavailable})` : ""}`,
    ignore: unavailable !== undefined,
    fn: async (t) => {
      await using servers = new SubjectServers();
      await using open = await subject.open(servers);
      await runStoreSpec(t, open.spec);
    },
  });
}

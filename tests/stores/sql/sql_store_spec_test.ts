/**
 * The shared Store spec on every store of tests/support/store_subjects.ts that needs a SQL server:
 * PostgreSQL (`npm:pg`), MariaDB (`npm:mysql2`) and an `InterleavedStore` of the two, on one
 * PostgreSQL and one MariaDB this file starts. (tests/stores/postgres/postgres_store_test.ts and
 * tests/stores/mysql/mysql_store_test.ts run it again with each driver, among their own cases.)
 */

import "../../support/deadline.ts"; // a time limit on every test of this file
import { runStoreSpec } from "../../support/store_spec.ts";
import { SUBJECTS, SubjectServers } from "../../support/store_subjects.ts";

Deno.test("store spec: the SQL stores", async (t) => {
  await using servers = new SubjectServers();
  for (const subject of SUBJECTS.filter((s) => s.group === "sql")) {
    const ignored = subject.notSpec ?? subject.unavailable?.();
    const name = `${subject.name}${ignored ? ` (ignored: ${ignored})` : ""}`;
    await t.step({
      name,
      ignore: ignored !== undefined,
      fn: async (t) => {
        await using open = await subject.open(servers);
        await runStoreSpec(t, open.spec);
      },
    });
  }
});

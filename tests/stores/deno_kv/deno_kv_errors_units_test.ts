import "../../support/deadline.ts"; // a time limit on every test of this file
// How a DenoKvStore's failures are classified (src/stores/deno_kv/deno_kv_errors.ts): openError
// on the errors Deno.openKv raises (a real one where Deno makes it, Deno's own error classes
// otherwise) and isBusy on SQLite's words. The store's side is in deno_kv_store_test.ts.
import assert from "node:assert/strict";
import { KvIdError } from "../../../src/contract/errors.ts";
import { isBusy, openError } from "../../../src/stores/deno_kv/deno_kv_errors.ts";

const AT = { key: "kvid", field: "order" };

/** What Deno.openKv raises for `path`. */
async function openFailure(path: string): Promise<unknown> {
  try {
    (await Deno.openKv(path)).close();
  } catch (err) {
    return err;
  }
  assert.fail(`${path} opened`);
}

Deno.test("deno kv errors: a directory that does not exist is config, the path named", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/missing/ids.sqlite3`;
    const cause = await openFailure(path); // Deno 2: Error "unable to open database file: ..."
    const e = openError(cause, path, AT);
    assert.ok(e instanceof KvIdError);
    assert.equal(e.code, "config");
    assert.equal(e.cause, cause);
    assert.equal(e.key, "kvid");
    assert.equal(e.field, "order");
    assert.ok(
      e.message.startsWith(
        `could not open the Deno KV database ${JSON.stringify(path)}: does its directory exist? (${
          (cause as Error).message
        })`,
      ),
      e.message,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  // Deno's NotFound, in words that do not say it.
  const nf = openError(new Deno.errors.NotFound("no such file"), "/x/ids", AT);
  assert.equal(nf.code, "config");
  assert.match(
    nf.message,
    /^could not open the Deno KV database "\/x\/ids": does its directory exist\? \(no such file\)/,
  );
});

Deno.test("deno kv errors: a missing permission is config, whichever class Deno uses", () => {
  for (
    const cause of [
      new Deno.errors.PermissionDenied('Requires write access to "/x/ids"'),
      new Deno.errors.NotCapable('Requires write access to "/x/ids", run again with --allow-write'),
    ]
  ) {
    const e = openError(cause, "/x/ids", AT);
    assert.equal(e.code, "config", cause.name);
    assert.ok(
      e.message.startsWith(
        `could not open the Deno KV database "/x/ids": ${cause.message}`,
      ),
      e.message,
    );
    assert.doesNotMatch(e.message, /directory exist/);
  }
});

Deno.test("deno kv errors: anything else may heal, a connection error", () => {
  const e = openError(new Error("disk I/O error"), "/x/ids", AT);
  assert.equal(e.code, "connection");
  assert.ok(e.message.startsWith('could not open the Deno KV database "/x/ids": disk I/O error'));
  // A source that is not a path (a function, an open Kv, the default): no path in the words.
  const f = openError(new Error("remote refused"), () => Deno.openKv(":memory:"), AT);
  assert.equal(f.code, "connection");
  assert.ok(f.message.startsWith("could not open the Deno KV database: remote refused"), f.message);
  const u = openError(new Error("remote refused"), undefined, AT);
  assert.ok(u.message.startsWith("could not open the Deno KV database: remote refused"), u.message);
  // A thrown value that is not an Error: said as text.
  const s = openError("plain words", "/x/ids", AT);
  assert.equal(s.code, "connection");
  assert.ok(s.message.startsWith('could not open the Deno KV database "/x/ids": plain words'));
});

Deno.test("deno kv errors: without --unstable-kv, config saying so", async () => {
  const errors = new URL("../../../src/stores/deno_kv/deno_kv_errors.ts", import.meta.url).href;
  const script = `
    import { openError } from ${JSON.stringify(errors)};
    const e = openError(new Error("x"), ":memory:", { key: "kvid", field: "order" });
    console.log(JSON.stringify({ code: e.code, message: e.message }));`;
  // --no-config: this project's deno.json turns the flag on.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", script],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const result = JSON.parse(new TextDecoder().decode(out.stdout).trim());
  assert.equal(result.code, "config");
  assert.match(result.message, /^Deno\.openKv is not available: run with --unstable-kv/);
});

Deno.test("deno kv errors: isBusy is SQLite's locked or busy database, on an Error only", () => {
  assert.equal(isBusy(new TypeError("database is locked")), true);
  assert.equal(isBusy(new Error("Database is busy")), true);
  assert.equal(isBusy(new Error("disk I/O error")), false);
  assert.equal(isBusy("database is locked"), false);
  assert.equal(isBusy({ message: "database is locked" }), false);
  assert.equal(isBusy(undefined), false);
});

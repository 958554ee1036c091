/**
 * One edge process of tests/client/http_store_test.ts: `KvId("order")` on an `HttpStore` of the
 * service at `args[0]`, `args[1]` calls of next(), each ID printed on its own line, then the
 * generator closed (its unused tail given back). Exits 1 on any failed call.
 */

import { KvId } from "../../mod.ts";
import { HttpStore } from "../../src/client/mod.ts";

const [url, calls, token] = Deno.args;
const store = new HttpStore(url, { token, requestTimeout: 2_000 });
// Small steps: many reservations, so the service restart falls among them.
const ORDER_ID = new KvId("order", {
  store,
  bigint: true,
  minStep: 1,
  maxStep: 16,
  timeout: 30_000,
});
const out: string[] = [];
const encoder = new TextEncoder();
for (let i = 0; i < Number(calls); i++) {
  out.push(String(await ORDER_ID.next()));
  if (out.length === 50) {
    await Deno.stdout.write(encoder.encode(out.join("\n") + "\n"));
    out.length = 0;
  }
}
if (out.length > 0) await Deno.stdout.write(encoder.encode(out.join("\n") + "\n"));
await ORDER_ID.close();

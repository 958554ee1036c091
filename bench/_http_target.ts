/**
 * A comparison target of `service_bench.ts`, in its own process: `hello` (a bare `Deno.serve`
 * hello-world), `incr <redis-url>` (one `INCR` per request, what a hand-written ID service
 * does) or `incrby100 <redis-url>` (one `INCRBY` of 100 per request, printing the 100 IDs one a
 * line as the service's `count=100` does). Prints `listening <port>` on stdout.
 *
 *     deno run -A bench/_http_target.ts hello
 *
 * @module
 */

import { createClient } from "redis";

const [mode, url] = Deno.args;
let handler: (req: Request) => Response | Promise<Response>;
if (mode === "hello") {
  handler = () => new Response("hello\n");
} else if (mode === "incr" && url) {
  const client = createClient({ url });
  client.on("error", () => {});
  await client.connect();
  handler = async () => new Response(`${await client.incr("kvid-bench:incr-service")}\n`);
} else if (mode === "incrby100" && url) {
  const client = createClient({ url });
  client.on("error", () => {});
  await client.connect();
  handler = async () => {
    const last = await client.incrBy("kvid-bench:incrby-service", 100);
    let body = "";
    for (let id = last - 99; id <= last; id++) body += `${id}\n`;
    return new Response(body);
  };
} else {
  console.error("usage: _http_target.ts hello | incr <redis-url> | incrby100 <redis-url>");
  Deno.exit(2);
}
Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`listening ${port}`),
}, handler);

import { RESERVE_SCRIPT, FIRST_RESERVE_SCRIPT } from "../src/stores/redis/scripts.ts";
import { LuaScript } from "../src/stores/redis/lua_script.ts";
import { command } from "../tests/server.ts";
import { benchClient, benchServer, BENCH_KEY } from "./_server.ts";
const server = await benchServer();
const { raw, redis } = await benchClient(server.url);
const ALT = new LuaScript(Deno.readTextFileSync("/tmp/22r/alt.lua"));
async function stat(name: string) {
  const cs = String(await command(server.url, "INFO", "commandstats"));
  const m = new RegExp(`cmdstat_${name}:calls=(\\d+),usec=(\\d+)`).exec(cs);
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
}
async function measure(label: string, cmd: string, f: (i: number) => Promise<unknown>) {
  const [c0, u0] = await stat(cmd);
  const t0 = performance.now();
  for (let i = 0; i < 3000; i++) await f(i);
  const wall = (performance.now() - t0) / 3000 * 1000;
  const [c1, u1] = await stat(cmd);
  console.log(label.padEnd(14), "server µs/call", ((u1 - u0) / (c1 - c0)).toFixed(2), "wall µs", wall.toFixed(0));
}
const args = (i: number) => ["f" + (i % 50), "8", "0", "0", "\0step:f", "8", "\0pool:f"];
await RESERVE_SCRIPT.run(redis, [BENCH_KEY], args(0)); await RESERVE_SCRIPT.run(redis, [BENCH_KEY], args(0));
await ALT.run(redis, [BENCH_KEY], args(0)); await ALT.run(redis, [BENCH_KEY], args(0));
for (let r = 0; r < 2; r++) {
  await measure("hincrby", "hincrby", (i) => raw.hIncrBy(BENCH_KEY, "g" + (i % 50), 8));
  await measure("reserve", "evalsha", (i) => RESERVE_SCRIPT.run(redis, [BENCH_KEY], args(i)));
  await measure("alt", "evalsha", (i) => ALT.run(redis, [BENCH_KEY], args(i)));
  await measure("first (eval)", "eval", (i) => FIRST_RESERVE_SCRIPT.evalWhole(redis, [BENCH_KEY], [...args(i), "", "", ""]));
  await measure("first (sha)", "evalsha", (i) => FIRST_RESERVE_SCRIPT.run(redis, [BENCH_KEY], [...args(i), "", "", ""]));
}
console.log("load", Deno.loadavg()[0]);
Deno.exit(0);

/**
 * {@linkcode shutdown}: close every live generator, then the clients the library created.
 *
 * @module
 */

/** Something {@linkcode shutdown} closes. */
interface Closable {
  close(): unknown;
}

// Generators constructed and not closed yet. Weak: a generator dropped without close() is not
// kept alive by this registry. Its entry is swept once the set has doubled since the last sweep
// (amortized O(1)), not by a FinalizationRegistry: registering there and a WeakMap entry made
// tracking several times as costly as a WeakRef and a Set entry, on every new generator.
const generators = new Set<WeakRef<Closable>>();
let sweepAt = 1_024;
// What the library opened itself (a factory's client, a Deno KV database opened from a path):
// nobody else holds it, so nobody else can close it.
const owned = new Set<Closable>();

/** A generator's entry in the registry, kept by the generator to forget itself on close(). */
export type Tracked = WeakRef<Closable>;

/** Register a live generator (at construction); returns its entry. */
export function trackGenerator(gen: Closable): Tracked {
  const ref = new WeakRef(gen);
  generators.add(ref);
  if (generators.size >= sweepAt) {
    for (const r of generators) if (r.deref() === undefined) generators.delete(r);
    sweepAt = Math.max(1_024, 2 * generators.size);
  }
  return ref;
}

/** Forget a generator (on its close()). */
export function untrackGenerator(entry: Tracked): void {
  generators.delete(entry);
}

/** Register something the library opened and must close on {@linkcode shutdown}. */
export function own(resource: Closable): void {
  owned.add(resource);
}

/** Forget an owned resource (closed some other way). */
export function disown(resource: Closable): void {
  owned.delete(resource);
}

/**
 * Shut down everything @kvid/core started, so a script or a service exits by itself: first
 * every live {@linkcode KvId} and {@linkcode DailyId} is closed (pending calls reject with
 * `"closed"`, reservations in flight land), then every client the library created and holds
 * alone is closed: clients returned by a factory given as `redis` (to
 * {@linkcode configure} or to a generator), and Deno KV databases a `DenoKvStore` opened from
 * a path. A client passed as a value stays the caller's; the library closes it never.
 *
 * A client is closed with its `close()` method: `jsr:@db/redis` clients have one, and so have
 * the clients made by {@linkcode fromNodeRedis}, {@linkcode fromIoredis} and
 * {@linkcode fromBunRedis}. A factory is called again if a generator is used after shutdown.
 * Errors while closing are swallowed: shutdown always resolves.
 *
 * @example At the end of a script, or on SIGTERM in a service
 * ```ts
 * import { configure, KvId, type RedisClient, shutdown } from "@kvid/core";
 *
 * // `() => connect({ hostname: "127.0.0.1", port: 6379 })` with jsr:@db/redis in an app.
 * const connect = (): Promise<RedisClient> => Promise.reject(new Error("not in this example"));
 * configure({ redis: connect });
 * const ORDER_ID = new KvId("order");
 * await shutdown(); // ORDER_ID is closed, then the client connect() returned
 * await ORDER_ID.next().catch((err) => console.log(err.code)); // "closed"
 * ```
 */
export async function shutdown(): Promise<void> {
  const gens: Closable[] = [];
  for (const ref of generators) {
    const gen = ref.deref();
    if (gen !== undefined) gens.push(gen);
  }
  generators.clear();
  await Promise.allSettled(gens.map(async (g) => await g.close()));
  const resources = [...owned];
  owned.clear();
  await Promise.allSettled(resources.map(async (r) => await r.close()));
}

/**
 * Runs the delay proxy of `tests/support/proxy.ts` in a Worker, so that its timers and copies do not
 * run in the bench's own thread, between the awaits of the `next()` calls being timed.
 *
 * Message in: `{ host, port, delayMs }`; message out: `{ port }` of the proxy, once listening.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { startProxy } from "../tests/support/proxy.ts";

self.onmessage = async (e: MessageEvent<{ host: string; port: number; delayMs: number }>) => {
  const { host, port, delayMs } = e.data;
  const proxy = await startProxy({ host, port }, { delayMs });
  self.postMessage({ port: proxy.port });
};

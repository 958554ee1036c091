/**
 * `HttpStore`: a {@linkcode Store} that reserves its segments from the ID service over HTTP
 * (TinyID's client model), so a process that cannot or should not hold the store's credentials
 * runs the whole engine (prefetch, dynamic step, give-back) on segments of the service's
 * counters. Web-standard: `fetch` only.
 *
 * @module
 */

import { fieldLabel, KvIdError } from "../contract/errors.ts";
import type {
  IdRange,
  Release,
  Reservation,
  ReserveOptions,
  StepMemory,
  Store,
} from "../contract/store.ts";
import type {
  ReleaseRequest,
  ReleaseResponse,
  SegmentRequest,
  SegmentResponse,
  ServiceError,
  StepBody,
} from "./types.ts";

/** Options of {@linkcode HttpStore}. */
export interface HttpStoreOptions {
  /** A token whose names cover the generators' names (`KVID_TOKENS` of the service). */
  token: string;
  /**
   * How long one request may take (ms) before it counts as a failed connection (the engine
   * then retries until its own `timeout`).
   * @default {5_000}
   */
  requestTimeout?: number;
  /** The `fetch` to use (a test double, a proxy-aware one). @default {globalThis.fetch} */
  fetch?: typeof fetch;
}

const KEY = "kvid";
const MAX_ID = (1n << 63n) - 1n;
const DECIMAL = /^(0|[1-9][0-9]{0,18})$/;
/** Segments whose receipts are kept per counter (the newest), and counters kept (the latest). */
const HELD_PER_FIELD = 8;
const HELD_FIELDS = 10_000;

/** A segment the service handed out, and the receipt a release of its IDs shows. */
interface Held {
  readonly ranges: readonly IdRange[];
  readonly receipt: string;
}

/**
 * A store whose reservations are `POST /v1/segments/{name}` to the ID service. Only the
 * service's hash is offered (`key` `"kvid"`, the default of `KvId`): the service keeps its
 * counters there, and a token's names are names in it (so a token cannot touch any other key of
 * the service's store). `DailyId` keeps its counters under other keys: it is not served; ask
 * the service's `/v1/daily/{name}` for daily serials. `replicas` is refused (`config`): the
 * service's store decides its own durability.
 *
 * Failures classify as any store's do: a refused token (401, 403) or a request the service
 * cannot serve (400) is `config` (the engine fails fast), and so is the service's store
 * refusing its configuration (500 `store_config`); the store refusing the reservation (500
 * `internal`) is `reply`; the service unreachable, restarting or answering 503/502/504/429 is
 * `connection`/`unavailable` (retried until the generator's timeout); a counter at 2^63-1 is
 * `overflow`. A redirect is not followed (the token and the body would go where it points): it
 * is `config`, naming its `Location`; a segment answer of more or fewer IDs than asked is `reply`.
 * A raise past the counter plus one maximum segment (a `floor` option far above the
 * counter, a large `rollbackMargin`) needs an administrative token (403: `config`).
 *
 * Give-back (`release`, on close) shows the receipts of the segments the range lies in, kept
 * from their answers (the newest 8 per counter): the service gives back only IDs it handed to
 * this token, once. A range whose receipts are gone (the service restarted since, or refused
 * them) is not given back: a gap, never a duplicate.
 *
 * @example An edge process on the service's counters
 * ```ts
 * import { KvId } from "@kvid/core";
 * import { HttpStore } from "@kvid/core/client";
 * import { createHandler } from "@kvid/core/server";
 * import { DenoKvStore } from "@kvid/core/deno-kv";
 * import assert from "node:assert/strict";
 *
 * // The service (here in this process; usually elsewhere, holding the store's credentials):
 * using kv = new DenoKvStore(":memory:");
 * await using service = createHandler({ store: kv, tokens: "edge-token-0123456789:order", log() {} });
 * const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, service.fetch);
 *
 * const store = new HttpStore(`http://127.0.0.1:${server.addr.port}`, { token: "edge-token-0123456789" });
 * await using ORDER_ID = new KvId("order", { store });
 * assert.ok(await ORDER_ID.next() === 1 && await ORDER_ID.next() === 2);
 * await ORDER_ID.close();
 * await server.shutdown();
 * ```
 */
export class HttpStore implements Store, Release, StepMemory {
  readonly #base: string;
  readonly #auth: string;
  readonly #timeout: number;
  readonly #fetch: typeof fetch;
  readonly #held = new Map<string, Held[]>();

  /**
   * A store on the service at `url`, authenticated with `options.token`. Throws a TypeError on
   * a URL that is not http(s) or a malformed token.
   *
   * @param url The service's base URL, e.g. `https://ids.example.com` (a path prefix kept).
   * @param options The token and timeouts.
   */
  constructor(url: string | URL, options: HttpStoreOptions) {
    let base: URL;
    try {
      base = new URL(url);
    } catch {
      throw new TypeError(`HttpStore: not a URL: ${JSON.stringify(String(url))}`);
    }
    if (base.protocol !== "http:" && base.protocol !== "https:") {
      throw new TypeError(`HttpStore: the URL must be http: or https:, got ${base.protocol}`);
    }
    if (options === null || typeof options !== "object" || typeof options.token !== "string") {
      throw new TypeError("HttpStore: options.token (a service token) is required");
    }
    if (!/^[\x21-\x7e]{16,1024}$/.test(options.token)) {
      throw new TypeError("HttpStore: a token is 16 to 1,024 printable ASCII characters");
    }
    const timeout = options.requestTimeout ?? 5_000;
    if (!Number.isInteger(timeout) || timeout < 1) {
      throw new RangeError(`HttpStore: requestTimeout must be a positive integer, got ${timeout}`);
    }
    this.#base = base.href.replace(/\/+$/, "");
    this.#auth = `Bearer ${options.token}`;
    this.#timeout = timeout;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Reserve `count` IDs of `field` from the service; see {@linkcode Store.reserve}. */
  async reserve(
    key: string,
    field: string,
    count: number,
    options: ReserveOptions,
  ): Promise<Reservation> {
    this.#checkKey(key, field);
    // The generator's replicas option: this store cannot honour it, and says so.
    const replicas = options.generator?.replicas;
    if (typeof replicas === "number" && replicas > 0) {
      throw new KvIdError(
        "config",
        "HttpStore cannot wait for replicas (the service's store decides its durability)",
        this.#at(key, field),
      );
    }
    const body: SegmentRequest = {
      count,
      floor: String(options.floor),
      raiseTo: String(options.raiseTo),
      guard: options.guard,
    };
    const answer = await this.#call<SegmentResponse>("POST", field, "", body);
    const ranges = parseRanges(answer, count);
    if (ranges === undefined) {
      throw new KvIdError(
        "reply",
        "the service's segment answer is malformed",
        this.#at(key, field),
      );
    }
    if (typeof answer?.receipt === "string") this.#hold(field, { ranges, receipt: answer.receipt });
    return { ranges, raised: answer?.raised === true };
  }

  /**
   * Give back the unused tail of the last reservations, with their receipts; see
   * {@linkcode Release.release}. False without a receipt for it, or when the service refuses.
   */
  async release(key: string, field: string, range: IdRange): Promise<boolean> {
    this.#checkKey(key, field);
    const held = this.#held.get(field) ?? [];
    const shown = held.filter((h) =>
      h.ranges.some((r) => r.last >= range.first && r.first <= range.last)
    );
    if (shown.length === 0) return false;
    // Good for one release, whatever the answer.
    const left = held.filter((h) => !shown.includes(h));
    if (left.length === 0) this.#held.delete(field);
    else this.#held.set(field, left);
    const body: ReleaseRequest = {
      first: String(range.first),
      last: String(range.last),
      receipts: shown.map((h) => h.receipt),
    };
    const answer = await this.#call<ReleaseResponse>("POST", field, "/release", body, true);
    return answer?.released === true;
  }

  /** Keep the receipt of a segment of `field`. */
  #hold(field: string, segment: Held): void {
    let list = this.#held.get(field);
    if (list === undefined) {
      if (this.#held.size >= HELD_FIELDS) this.#held.delete(this.#held.keys().next().value!);
      this.#held.set(field, list = []);
    }
    list.push(segment);
    if (list.length > HELD_PER_FIELD) list.shift();
  }

  /** The step remembered next to the counter; see {@linkcode StepMemory.loadStep}. */
  async loadStep(key: string, field: string): Promise<number | undefined> {
    this.#checkKey(key, field);
    const answer = await this.#call<StepBody>("GET", field, "/step", undefined, true);
    const step = answer?.step;
    return typeof step === "number" && Number.isSafeInteger(step) && step > 0 ? step : undefined;
  }

  /** Remember the step next to the counter; see {@linkcode StepMemory.saveStep}. */
  async saveStep(key: string, field: string, step: number): Promise<void> {
    this.#checkKey(key, field);
    await this.#call<StepBody>("PUT", field, "/step", { step }, true);
  }

  /**
   * Counter `field` in this store's words, for messages: the service and the name, e.g.
   * `service http://127.0.0.1:8080, name "order"`; see {@linkcode Store.describe}.
   *
   * @example
   * ```ts
   * import { HttpStore } from "@kvid/core/client";
   * import assert from "node:assert/strict";
   *
   * const store = new HttpStore("http://127.0.0.1:8080", { token: "t".repeat(32) });
   * assert.equal(store.describe("kvid", "order"), 'service http://127.0.0.1:8080, name "order"');
   * ```
   *
   * @param _key The hash key (always the service's `"kvid"`).
   * @param field The counter.
   * @returns The words a {@linkcode KvIdError} puts in parentheses.
   */
  describe(_key: string, field: string): string {
    return `service ${this.#base}, name ${fieldLabel(field)}`;
  }

  #at(key: string, field: string): { key: string; field: string; where: string } {
    return { key, field, where: this.describe(key, field) };
  }

  #checkKey(key: string, field: string): void {
    if (key !== KEY) {
      throw new KvIdError(
        "config",
        `HttpStore serves the service's hash "${KEY}" only, not ${JSON.stringify(key)}: ` +
          "leave KvId's key option out (daily serials: ask the service's /v1/daily)",
        { key, field },
      );
    }
  }

  /**
   * One request. `optional`: a service or store without the operation (404, 501) resolves to
   * undefined instead of failing.
   */
  async #call<T>(
    method: string,
    field: string,
    op: string,
    body: unknown,
    optional = false,
  ): Promise<T | undefined> {
    const where = this.#at(KEY, field);
    const url = `${this.#base}/v1/segments/${encodeURIComponent(field)}${op}`;
    let res: Response;
    try {
      res = await this.#fetch(url, {
        method,
        headers: {
          authorization: this.#auth,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeout),
        // A redirect is not followed: it would send the token and the body to another origin.
        redirect: "manual",
      });
    } catch (cause) {
      throw new KvIdError(
        "connection",
        `the ID service could not be reached: ${cause instanceof Error ? cause.message : cause}`,
        { ...where, cause },
      );
    }
    if (res.type === "opaqueredirect" || (res.status >= 300 && res.status < 400)) {
      const location = res.headers.get("location");
      await res.body?.cancel();
      throw new KvIdError(
        "config",
        `the ID service answered a redirect (HTTP ${res.status}) to ${
          location === null ? "an unknown location" : JSON.stringify(location.slice(0, 200))
        }: not followed; give HttpStore the service's own URL`,
        where,
      );
    }
    let text: string;
    try {
      text = await res.text();
    } catch (cause) {
      throw new KvIdError("connection", "the ID service's answer was cut off", {
        ...where,
        cause,
      });
    }
    if (res.ok) {
      try {
        return JSON.parse(text) as T;
      } catch (cause) {
        throw new KvIdError("reply", "the ID service's answer is not JSON", { ...where, cause });
      }
    }
    let error: ServiceError["error"] | undefined;
    try {
      error = (JSON.parse(text) as ServiceError).error;
    } catch {
      // not the service's error shape (a proxy's page)
    }
    if (optional && (res.status === 501 || (res.status === 404 && error?.code !== "forbidden"))) {
      return undefined;
    }
    // A release the service would not take (receipts unknown after a restart, someone reserved
    // since): not given back.
    if (res.status === 409 && error?.code === "release_refused") return undefined;
    const said = `HTTP ${res.status}${error ? ` ${error.code}: ${error.message}` : ""}`;
    if (res.status === 401 || res.status === 403) {
      throw new KvIdError("config", `the ID service refused the token (${said})`, where);
    }
    if (res.status === 409 && error?.code === "overflow") {
      throw new KvIdError("overflow", "the counter would pass 2^63-1", where);
    }
    if (res.status === 500 && error?.code === "store_config") {
      throw new KvIdError("config", `the ID service's store is misconfigured (${said})`, where);
    }
    if (res.status === 500 && error?.code === "internal") {
      // The store refused it (e.g. a counter that is not an integer): waiting will not help.
      throw new KvIdError("reply", `the ID service's store refused it (${said})`, where);
    }
    if (res.status === 429 || res.status >= 500) {
      throw new KvIdError("unavailable", `the ID service cannot serve for now (${said})`, where);
    }
    throw new KvIdError("config", `the ID service refused the request (${said})`, where);
  }
}

/**
 * The ranges of a segment answer as bigints, or undefined when they are not `count` IDs exactly
 * (fewer, or more than asked for), increasing and within 1..2^63-1.
 */
function parseRanges(answer: SegmentResponse | undefined, count: number): IdRange[] | undefined {
  if (answer == null || !Array.isArray(answer.ranges) || answer.ranges.length === 0) {
    return undefined;
  }
  const ranges: IdRange[] = [];
  let total = 0n;
  let previous = 0n;
  for (const r of answer.ranges) {
    if (typeof r?.first !== "string" || typeof r?.last !== "string") return undefined;
    if (!DECIMAL.test(r.first) || !DECIMAL.test(r.last)) return undefined;
    const first = BigInt(r.first), last = BigInt(r.last);
    if (first <= previous || last < first || last > MAX_ID) return undefined;
    ranges.push({ first, last });
    total += last - first + 1n;
    previous = last;
  }
  // Exactly what was asked: more would be IDs this client was never given (a service or a
  // proxy answering 1..2^63-1 hands it IDs that others hold).
  return total === BigInt(count) ? ranges : undefined;
}

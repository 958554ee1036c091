/**
 * `/v1/segments/{name}` (and `/release`, `/step`): the store's own operations for a `KvId` in
 * another process (`HttpStore` of `@kvid/core/client`, TinyID's client model), on the counter
 * `name` of the service's hash. The handler checks the method, the token and the name first.
 *
 * @module
 */

import type { ReleaseResponse, SegmentResponse, StepBody } from "../client/types.ts";
import type { Codec } from "../codec/codec.ts";
import { withDeadline } from "../runtime/deadline_timer.ts";
import { KvIdError } from "../contract/errors.ts";
import { type AnyStore, MAX_ID, type Reservation } from "../contract/store.ts";
import { toKvIdError } from "../contract/store_errors.ts";
import { type Holder, type HolderOf, inScope, unauthorized } from "./auth.ts";
import { escapeLabel } from "./metrics.ts";
import { checkedName } from "./names.ts";
import { MAX_RECEIPTS_PER_RELEASE, RECEIPT, Receipts } from "./receipts.ts";
import { readLimited } from "./request.ts";
import { errorResponse, unavailable, worthRetry } from "./respond.ts";
import { notDurable } from "./refusals.ts";
/** The hash of the service's counters: `KvId`'s default key, so both see the same counters. */
const SEGMENT_KEY = "kvid";
/** Segment reservations the service has at its store at once, at most. */
const MAX_SEGMENTS_IN_FLIGHT = 64;
const MAX_BODY_BYTES = 4_096;
const JSON_TYPE = "application/json; charset=utf-8";

/** A 409 `release_refused`: the range was not given back, and why. */
function refusedRelease(why: string): Response {
  return errorResponse(409, "release_refused", `not given back: ${why}`);
}

/** Counts by name, at most 10,000 names (the oldest forgotten past it): bounded memory. */
class CappedCounts extends Map<string, number> {
  add(name: string): void {
    if (!this.has(name) && this.size >= 10_000) this.delete(this.keys().next().value!);
    this.set(name, (this.get(name) ?? 0) + 1);
  }
}

/** The highest value seen by name, at most 10,000 names (the oldest forgotten past it). */
class CappedHighs extends Map<string, bigint> {
  raise(name: string, value: bigint): void {
    const had = this.get(name);
    if (had !== undefined && had >= value) return;
    if (had === undefined && this.size >= 10_000) this.delete(this.keys().next().value!);
    this.set(name, value);
  }
}

/** What {@linkcode SegmentRoutes} works with. */
export interface SegmentRoutesOptions {
  /** The service's store. */
  store: AnyStore;
  /** How long a store operation may take (ms) before a 503. */
  timeout: number;
  /** The most IDs one reservation may ask for. */
  maxSegment: number;
  /** Where failures are logged. */
  log: (line: string) => void;
  /** What a request's token may do, and which token it is. */
  holderOf: HolderOf;
  /** Public forms by name (`KVID_FORMATS`): a segment past a form's largest ID is refused. */
  codecs?: ReadonlyMap<string, Codec<string>>;
}

/** The segment endpoints of one service, and their counters. */
export class SegmentRoutes {
  readonly #store: AnyStore;
  readonly #timeout: number;
  readonly #maxSegment: number;
  readonly #log: (line: string) => void;
  readonly #holderOf: HolderOf;
  readonly #codecs: ReadonlyMap<string, Codec<string>> | undefined;
  readonly #served = new CappedCounts();
  readonly #failed = new CappedCounts();
  readonly #receipts = new Receipts();
  /** The highest counter value a reservation or a read here saw, by name: what bounds raises. */
  readonly #highs = new CappedHighs();
  #inFlight = 0;

  constructor(options: SegmentRoutesOptions) {
    this.#store = options.store;
    this.#timeout = options.timeout;
    this.#maxSegment = options.maxSegment;
    this.#log = options.log;
    this.#holderOf = options.holderOf;
    this.#codecs = options.codecs;
  }

  /**
   * Answer `/v1/segments/{rest}`: `rest` is `{name}`, `{name}/release` or `{name}/step`; the
   * method, the token and the name are checked here.
   */
  async route(req: Request, rest: string): Promise<Response> {
    const slash = rest.indexOf("/");
    const op = slash < 0 ? "" : rest.slice(slash + 1);
    if (op !== "" && op !== "release" && op !== "step") {
      return errorResponse(404, "not_found", "no such endpoint");
    }
    const allow = op === "step" ? "GET, PUT" : "POST";
    if (!allow.split(", ").includes(req.method)) {
      return errorResponse(405, "method_not_allowed", `use ${allow}`, { allow });
    }
    const holder = this.#holderOf(req);
    if (holder === undefined) return unauthorized();
    const name = checkedName(slash < 0 ? rest : rest.slice(0, slash));
    if (typeof name !== "string") return name;
    if (!inScope(holder.scope, name)) {
      return errorResponse(403, "forbidden", "this token may not ask for IDs of that name");
    }
    return await this.answer(req, name, op, holder);
  }

  /**
   * Answer `op` (`""` reserve, `"release"`, `"step"`) on counter `name` for `holder`, whose
   * method, token and name the caller checked.
   */
  async answer(req: Request, name: string, op: string, holder: Holder): Promise<Response> {
    let body: Record<string, unknown> = {};
    if (req.method !== "GET") {
      const text = await readLimited(req, MAX_BODY_BYTES);
      if (text === undefined) {
        return errorResponse(413, "request_too_large", `the body is over ${MAX_BODY_BYTES} bytes`);
      }
      try {
        const parsed = JSON.parse(text === "" ? "{}" : text);
        if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw 0;
        body = parsed;
      } catch {
        return errorResponse(400, "bad_segment", "the body is not a JSON object");
      }
    }
    const bad = (message: string) => errorResponse(400, "bad_segment", message);
    const decimal = (v: unknown, what: string): bigint | Response => {
      if (v === undefined) return 0n;
      if (typeof v !== "string" || !/^(0|[1-9][0-9]{0,18})$/.test(v) || BigInt(v) > MAX_ID) {
        return bad(`${what} must be a decimal string from 0 to 2^63-1`);
      }
      return BigInt(v);
    };
    const json = (value: unknown) => {
      const res = new Response(JSON.stringify(value) + "\n");
      res.headers.set("content-type", JSON_TYPE);
      res.headers.set("cache-control", "no-store");
      return res;
    };
    const notOffered = () =>
      errorResponse(501, "not_implemented", "this service's store does not offer that");
    try {
      if (op === "") {
        const count = body.count;
        if (
          !Number.isInteger(count) || (count as number) < 1 || (count as number) > this.#maxSegment
        ) {
          return bad(`count must be an integer from 1 to ${this.#maxSegment}`);
        }
        const floor = decimal(body.floor, "floor");
        if (typeof floor !== "bigint") return floor;
        const raiseTo = decimal(body.raiseTo ?? body.floor, "raiseTo");
        if (typeof raiseTo !== "bigint") return raiseTo;
        if (body.guard !== undefined && typeof body.guard !== "boolean") {
          return bad("guard must be true or false");
        }
        const guard = body.guard !== false;
        // A counter below the floor is set to raiseTo: below the floor, that would lower it.
        if (guard && raiseTo < floor) return bad("raiseTo must be at least floor");
        // Each segment request is a store command (IDs requests mostly are not): at most
        // MAX_SEGMENTS_IN_FLIGHT at once, the rest told to come back, so a flood of them
        // queues here rather than on the this.#store.
        if (this.#inFlight >= MAX_SEGMENTS_IN_FLIGHT) {
          return errorResponse(503, "unavailable", "too many segment requests at once: retry", {
            "retry-after": "1",
          });
        }
        this.#inFlight++;
        let reservation: Reservation;
        try {
          if (guard && !holder.admin) {
            const refused = await this.#raiseRefused(name, raiseTo);
            if (refused !== undefined) return refused;
          }
          const form = holder.admin ? undefined : this.#codecs?.get(name);
          if (form !== undefined) {
            const past = await this.#pastForm(name, form.max, count as number, {
              floor: guard ? floor : 0n,
              raiseTo,
            });
            if (past !== undefined) return past;
          }
          reservation = await this.#bounded(
            this.#store.reserve(SEGMENT_KEY, name, count as number, {
              floor,
              raiseTo,
              guard,
              exact: true,
            }),
          );
        } finally {
          this.#inFlight--;
        }
        this.#served.add(name);
        const top = reservation.ranges.at(-1);
        if (top !== undefined) this.#highs.raise(name, top.last);
        const answer: SegmentResponse = {
          name,
          ranges: reservation.ranges.map((r) => ({ first: String(r.first), last: String(r.last) })),
          raised: reservation.raised,
          receipt: this.#receipts.issue(name, holder.holder, reservation.ranges),
        };
        return json(answer);
      }
      if (op === "release") {
        if (this.#store.release === undefined) return notOffered();
        const first = decimal(body.first, "first");
        if (typeof first !== "bigint") return first;
        const last = decimal(body.last, "last");
        if (typeof last !== "bigint") return last;
        if (first < 1n || last < first) return bad("a range needs 1 <= first <= last");
        const receipts = body.receipts;
        if (receipts === undefined || (Array.isArray(receipts) && receipts.length === 0)) {
          return refusedRelease(
            "a release needs the receipts of the segments it gives back (receipts: the " +
              "segment answers' receipt values)",
          );
        }
        if (
          !Array.isArray(receipts) || receipts.length > MAX_RECEIPTS_PER_RELEASE ||
          !receipts.every((r) => typeof r === "string" && RECEIPT.test(r))
        ) {
          return bad(`receipts must be 1 to ${MAX_RECEIPTS_PER_RELEASE} receipts of segments`);
        }
        const why = this.#receipts.take(name, holder.holder, receipts, { first, last });
        if (why !== undefined) return refusedRelease(why);
        const released = await this.#bounded(
          this.#store.release(SEGMENT_KEY, name, { first, last }),
        );
        if (!released) {
          return refusedRelease(
            `the counter is no longer at ${last}: someone reserved since (the IDs stay a gap)`,
          );
        }
        return json({ released } satisfies ReleaseResponse);
      }
      if (req.method === "GET") {
        if (this.#store.loadStep === undefined) return notOffered();
        const step = await this.#bounded(this.#store.loadStep(SEGMENT_KEY, name));
        return json({ step: step ?? null } satisfies StepBody);
      }
      if (this.#store.saveStep === undefined) return notOffered();
      const step = body.step;
      if (!Number.isSafeInteger(step) || (step as number) < 1) {
        return bad("step must be a positive integer");
      }
      if (!holder.admin && (step as number) > this.#maxSegment) {
        return errorResponse(
          403,
          "forbidden",
          `a step above ${this.#maxSegment} (the segment cap) needs an administrative token`,
        );
      }
      await this.#bounded(this.#store.saveStep(SEGMENT_KEY, name, step as number));
      return json({ step } as StepBody);
    } catch (err) {
      return this.#failure(err, name);
    }
  }

  /** The counters of the names `visible` lets through, as Prometheus lines. */
  metrics(visible: (name: string) => boolean): string[] {
    const out: string[] = [];
    for (
      const [metric, help, counts] of [
        ["kvid_segments_total", "Segments reserved for other processes (HttpStore)", this.#served],
        ["kvid_segment_failures_total", "Segment requests that failed for the store", this.#failed],
      ] as const
    ) {
      out.push(`# HELP ${metric} ${help}.`, `# TYPE ${metric} counter`);
      for (const [name, n] of counts) {
        if (visible(name)) out.push(`${metric}{name="${escapeLabel(name)}"} ${n}`);
      }
    }
    return out;
  }

  /**
   * Why a raise of counter `name` to `raiseTo` by a token that is not administrative is refused
   * (403), or undefined when it is within the counter plus one maximum segment: no worse than
   * reserving that segment. The counter is read only when what reservations here saw does not
   * already allow it (after a restart, or a client that knows more than this instance).
   */
  async #raiseRefused(name: string, raiseTo: bigint): Promise<Response | undefined> {
    const most = BigInt(this.#maxSegment);
    if (raiseTo <= (this.#highs.get(name) ?? 0n) + most) return undefined;
    if (this.#store.counters !== undefined) {
      const found = (await this.#bounded(this.#store.counters(SEGMENT_KEY, { names: [name] })))
        .get(name);
      // A counter with a layout counts block cycles, not IDs: no bound from it.
      if (found === undefined) this.#highs.raise(name, 0n);
      else if (found.layout === undefined) this.#highs.raise(name, found.value);
    }
    const high = this.#highs.get(name) ?? 0n;
    if (raiseTo <= high + most) return undefined;
    return errorResponse(
      403,
      "forbidden",
      `raising the counter to ${raiseTo} needs an administrative token: this token may raise ` +
        `it to ${high + most} at most (its value ${high} plus one maximum segment)`,
    );
  }

  /**
   * Why a reservation of `count` IDs of counter `name` (raised to `raiseTo` when it is below
   * `floor`) by a token that is not administrative is refused (409 `domain`): its top would pass
   * `max`, the largest ID of the name's public form. Refused before it is made, so the form's
   * last IDs stay for `/v1/ids` instead of going to a segment mostly past them. Read from the
   * store where it can say (else what this instance saw); reservations at the same moment may
   * each pass on the same reading.
   */
  async #pastForm(
    name: string,
    max: bigint,
    count: number,
    { floor, raiseTo }: { floor: bigint; raiseTo: bigint },
  ): Promise<Response | undefined> {
    let value = this.#highs.get(name) ?? 0n;
    if (this.#store.counters !== undefined) {
      const found = (await this.#bounded(this.#store.counters(SEGMENT_KEY, { names: [name] })))
        .get(name);
      if (found === undefined) value = 0n;
      else if (found.layout === undefined) value = found.value;
    }
    const from = value < floor ? raiseTo : value;
    if (from + BigInt(count) <= max) return undefined;
    return errorResponse(
      409,
      "domain",
      `a segment of ${count} IDs from ${from} would pass ${max}, the largest ID this name's ` +
        "public form (KVID_FORMATS) encodes",
    );
  }

  #bounded<T>(work: Promise<T>): Promise<T> {
    const timeout = this.#timeout;
    return withDeadline(
      work,
      timeout,
      () =>
        new KvIdError("timeout", `the store did not answer within ${timeout} ms`, {
          key: SEGMENT_KEY,
          field: "",
        }),
    );
  }

  #failure(err: unknown, name: string): Response {
    const e = err instanceof KvIdError ? err : toKvIdError(err, SEGMENT_KEY, name);
    this.#failed.add(name);
    if (worthRetry(e.code)) return unavailable();
    this.#log(
      `kvid service: segment ${JSON.stringify(name.slice(0, 100))} failed: ${e.name}: ${e.message}`,
    );
    if (e.code === "overflow") {
      return errorResponse(409, "overflow", "the counter would pass 2^63-1");
    }
    if (e.reason === "name-too-long") {
      return errorResponse(400, "bad_name", "the name is too long for this store");
    }
    if (e.reason === "not-durable") return notDurable(e);
    if (e.code === "config") {
      return errorResponse(
        500,
        "store_config",
        "the ID store refuses this service's configuration (credentials, permissions or a " +
          "command it needs): the operator must fix it; see the service log",
      );
    }
    // The store's refusal (a counter that is not an integer, ...): HttpStore reports "reply".
    return errorResponse(500, "internal", "the store refused the reservation; see the service log");
  }
}

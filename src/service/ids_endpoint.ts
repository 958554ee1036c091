/**
 * `POST|GET /v1/ids/{name}` and `/v1/daily/{name}`: up to {@linkcode MAX_COUNT} IDs of one
 * generator as text, one a line, or as JSON; and what a failed reservation answers. The hot
 * path of the service: every cost here is every request's.
 *
 * @module
 */

import type { Codec } from "../codec/codec.ts";
import { KvIdError } from "../contract/errors.ts";
import { inScope, type ScopeOf, unauthorized } from "./auth.ts";
import type { Entry, Generators, Kind } from "./generators.ts";
import { idLines, runLines } from "./id_lines.ts";
import { decodeName } from "./names.ts";
import { errorResponse, unavailable, worthRetry } from "./respond.ts";
import { notDurable } from "./refusals.ts";

/** Most IDs one request may ask for. */
export const MAX_COUNT = 10_000;

const JSON_TYPE = "application/json; charset=utf-8";
const ID_METHODS = "GET, POST";

/** What {@linkcode idsEndpoint} answers from. */
export interface IdsEndpointOptions {
  generators: Generators;
  scopeOf: ScopeOf;
  /** Public forms by name, for `/v1/ids`. */
  codecs: ReadonlyMap<string, Codec<string>> | undefined;
  log: (line: string) => void;
}

/**
 * Answers one IDs request: `rest` is the path after `/v1/ids/` or `/v1/daily/`. A refusal is
 * answered at once, IDs through a promise.
 */
export type IdsEndpoint = (
  req: Request,
  query: string,
  kind: Kind,
  rest: string,
) => Response | Promise<Response>;

/** The IDs endpoint of one service. */
export function idsEndpoint(options: IdsEndpointOptions): IdsEndpoint {
  const { generators, scopeOf, codecs, log } = options;

  function failure(err: unknown, entry: Entry): Response {
    if (err instanceof KvIdError && err.reason === "name-too-long") {
      // A name within KvId's 4,096 bytes that the store cannot key (Deno KV: 2 KiB keys).
      generators.drop(entry);
      return errorResponse(400, "bad_name", "the name is too long for this store");
    }
    entry.failedRequests++;
    if (err instanceof KvIdError && worthRetry(err.code)) return unavailable();
    if (err instanceof KvIdError && err.reason === "not-durable") {
      logFailure(err, entry);
      return notDurable(err);
    }
    if (err instanceof KvIdError && err.code === "config") {
      logFailure(err, entry);
      return errorResponse(
        500,
        "store_config",
        "the ID store refuses this service's configuration (credentials, permissions or a " +
          "command it needs): the operator must fix it; see the service log",
      );
    }
    if (err instanceof KvIdError && err.code === "overflow" && entry.kind === "daily") {
      const ends = (entry.gen as unknown as { stats(): { dayEndsAt?: number } }).stats()
        .dayEndsAt;
      const wait = ends === undefined ? 60 : Math.max(1, Math.ceil((ends - Date.now()) / 1000));
      return errorResponse(503, "unavailable", "today's serials are used up", {
        "retry-after": String(wait),
      });
    }
    logFailure(err, entry);
    if (err instanceof KvIdError && err.code === "overflow") {
      return errorResponse(409, "overflow", "the counter would pass 2^63-1");
    }
    if (err instanceof KvIdError && err.code === "domain") {
      // A counter past its public form's domain: every later ID is past it too.
      return errorResponse(
        409,
        "domain",
        "the counter is past the largest ID this name's public form (KVID_FORMATS) encodes",
      );
    }
    return errorResponse(500, "internal", "the ID could not be made; see the service log");
  }

  function logFailure(err: unknown, entry: Entry): void {
    log(
      `kvid service: ${entry.kind} ${JSON.stringify(entry.name.slice(0, 100))} failed: ${
        err instanceof Error ? `${err.name}: ${err.message}` : String(err)
      }`,
    );
  }

  // Not async: each async layer between fetch() and the ID costs a promise and microtask turns.
  return (req, query, kind, rest) => {
    if (req.method !== "GET" && req.method !== "POST") {
      return errorResponse(405, "method_not_allowed", `use ${ID_METHODS}`, { allow: ID_METHODS });
    }
    const scope = scopeOf(req);
    if (scope === undefined) return unauthorized();
    // The engine checks the rest of the name's rules when it makes the generator.
    const name = decodeName(rest);
    if (typeof name !== "string") return name;
    if (!inScope(scope, name)) {
      return errorResponse(403, "forbidden", "this token may not ask for IDs of that name");
    }
    let count = 1;
    if (query !== "") {
      // `count=<digits>` alone is read by hand (URLSearchParams costs more); any other query
      // goes through it.
      count = simpleCount(query);
      if (count < 0) {
        const counts = new URLSearchParams(query).getAll("count");
        count = counts.length === 0
          ? 1
          : counts.length === 1 && /^[0-9]{1,6}$/.test(counts[0])
          ? Number(counts[0])
          : 0;
      }
      if (!(count >= 1 && count <= MAX_COUNT)) {
        return errorResponse(400, "bad_count", `count must be an integer from 1 to ${MAX_COUNT}`);
      }
    }
    let entry: Entry | undefined;
    const now = Date.now();
    try {
      entry = generators.get(kind, name, now);
    } catch (err) {
      const why = err instanceof Error
        ? err.message.replace(/^(KvId|DailyId) /, "")
        : "it is not valid";
      return errorResponse(400, "bad_name", `bad name: ${why}`);
    }
    if (entry === undefined) {
      return errorResponse(
        429,
        "too_many_generators",
        "too many live generators: try again later",
        { "retry-after": "10" },
      );
    }
    const e = entry;
    // Buffered IDs that no call waits for (the usual case): answered now, no promise of our own
    // (each promise costs a microtask turn), the IDs as a run, not an array.
    const first = e.takeRun === undefined ? -1 : e.takeRun(count);
    if (first >= 0) return answerRun(req, e, first, count, now);
    e.pending++;
    const failed = (err: unknown) => {
      e.pending--;
      return failure(err, e);
    };
    // One ID through next(): no array, no count check (cheaper than nextBatch(1)).
    if (count === 1) {
      return e.gen.next().then((id) => {
        e.pending--;
        return answer(req, e, [id], Date.now());
      }, failed);
    }
    return e.gen.nextBatch(count).then((list) => {
      e.pending--;
      return answer(req, e, list, Date.now());
    }, failed);
  };

  /** The answer of the run of `count` IDs from `first`, taken at `now` (epoch ms). */
  function answerRun(
    req: Request,
    entry: Entry,
    first: number,
    count: number,
    now: number,
  ): Response {
    if (codecs !== undefined || wantsJson(req)) {
      const list: number[] = new Array(count);
      for (let i = 0; i < count; i++) list[i] = first + i;
      return answer(req, entry, list, now);
    }
    counted(entry, count, now);
    return textAnswer(runLines(first, count));
  }

  function counted(entry: Entry, count: number, now: number): void {
    entry.issued += count;
    entry.rates.add(count, now);
    generators.rates.add(count, now);
  }

  /** The answer of a request that got its IDs, at `done` (epoch ms). */
  function answer(
    req: Request,
    entry: Entry,
    list: (number | bigint | string)[],
    done: number,
  ): Response {
    counted(entry, list.length, done);
    const json = wantsJson(req);
    const name = entry.name;
    const codec = entry.kind === "ids" ? codecs?.get(name) : undefined;
    let encoded: string[] | undefined;
    try {
      // A codec is handed bigints, as before the generator served numbers below 2^53.
      encoded = codec &&
        list.map((id) => codec.encode(typeof id === "number" ? BigInt(id) : id as bigint));
    } catch (err) {
      return failure(err, entry); // a counter past its form's domain: 409 "domain"
    }
    let body = "";
    if (json) {
      body = JSON.stringify(
        encoded ? { name, ids: list.map(String), encoded } : { name, ids: list.map(String) },
      ) + "\n";
    } else if (encoded) {
      for (let i = 0; i < list.length; i++) body += `${list[i]}\t${encoded[i]}\n`;
    } else {
      body = idLines(list);
    }
    if (!json) return textAnswer(body);
    const res = textAnswer(body);
    res.headers.set("content-type", JSON_TYPE);
    return res;
  }
}

/** Whether the request asks for JSON (`Accept: application/json`). */
function wantsJson(req: Request): boolean {
  return (req.headers.get("accept") ?? "").includes("application/json");
}

/**
 * A 200 with a string body, never cached. A string body is `text/plain;charset=UTF-8` by the
 * Fetch standard: only JSON sets its type. Headers are set one by one: in Deno 2.9 a headers
 * init (an object, an array of pairs or a `Headers` made once) costs several times as much,
 * measured beside a hello-world (bench/service_handler_bench.ts).
 */
function textAnswer(body: string): Response {
  const res = new Response(body);
  res.headers.append("cache-control", "no-store"); // none yet: append skips the search
  return res;
}

/** The count of a query that is `count=<1 to 6 digits>` and nothing else, else -1. */
function simpleCount(query: string): number {
  const n = query.length - 6;
  if (n < 1 || n > 6 || !query.startsWith("count=")) return -1;
  let count = 0;
  for (let i = 6; i < query.length; i++) {
    const d = query.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    count = count * 10 + d;
  }
  return count;
}

/**
 * The service's URL routing: the path and query cut out of the request URL by hand, the base
 * path taken off, and each path handed to its endpoint; size limits on the URL and the body
 * first. Not async itself, nor awaiting what it hands on: each async layer between `fetch()`
 * and the ID costs a request its own promise and microtask turns.
 *
 * @module
 */

import { validHost } from "./host.ts";
import type { IdsEndpoint } from "./ids_endpoint.ts";
import { allowOf, openApiDocument } from "./openapi.ts";
import { PAGE_PATHS } from "./page_routes.ts";
import { PROBE_PATHS } from "./probes.ts";
import { errorResponse, text } from "./respond.ts";

const MAX_URL_LENGTH = 16_384;
const MAX_BODY_BYTES = 65_536;
const JSON_TYPE = "application/json; charset=utf-8";

/** One endpoint answering the paths it is routed (the path without the base path). */
export type PathHandler = (req: Request, path: string) => Response | Promise<Response>;

/** The endpoints {@linkcode router} hands requests to. */
export interface Routes {
  /** The prefix the service is mounted under (`""`: the root). */
  basePath: string;
  /** `/v1/ids/{name}` and `/v1/daily/{name}`. */
  ids: IdsEndpoint;
  /** `/v1/segments/{rest}`, handed `rest`. */
  segments: PathHandler;
  /** `/healthz`, `/readyz`, `/metrics`. */
  probes: PathHandler;
  /** `/`, `/login`, `/logout`. */
  page: PathHandler;
}

/** The router of one service: a request to its answer. */
export function router(routes: Routes): (req: Request) => Response | Promise<Response> {
  const { basePath, ids, segments, probes, page } = routes;
  let openApiText: string | undefined;
  return (req) => {
    const raw = req.url; // a getter: read once
    if (raw.length > MAX_URL_LENGTH) {
      return errorResponse(414, "request_too_large", `the URL is over ${MAX_URL_LENGTH} bytes`);
    }
    // Deno.serve builds the URL as http://<Host><target>: a Host such as "x/v1/ids/order?"
    // would choose the route. Only host[:port] passes (the service's listener checks it too).
    const host = req.headers.get("host");
    if (host !== null && !validHost(host)) {
      return errorResponse(400, "bad_request", "the Host header is not host[:port]");
    }
    const length = req.headers.get("content-length");
    if (length !== null && !(Number(length) <= MAX_BODY_BYTES)) {
      return errorResponse(413, "request_too_large", `the body is over ${MAX_BODY_BYTES} bytes`);
    }
    // The path and query as sent, cut out of the URL by hand: `new URL()` costs more than the
    // ID does, and would resolve dot segments of a name.
    const start = raw.indexOf("/", raw.indexOf("//") + 2);
    let end = raw.indexOf("#", start);
    if (end < 0) end = raw.length;
    const q = raw.indexOf("?", start);
    let path = start < 0 ? "/" : raw.slice(start, q >= 0 && q < end ? q : end);
    if (basePath !== "") {
      // Mounted under a prefix: only paths below it are ours, and they are routed without it.
      if (path !== basePath && !path.startsWith(basePath + "/")) {
        return errorResponse(404, "not_found", "no such endpoint");
      }
      path = path.slice(basePath.length) || "/";
    }
    const query = q >= 0 && q < end ? raw.slice(q + 1, end) : "";
    if (path.startsWith("/v1/ids/") && path.length > 8) {
      return ids(req, query, "ids", path.slice(8));
    }
    if (path.startsWith("/v1/daily/") && path.length > 10) {
      return ids(req, query, "daily", path.slice(10));
    }
    if (path.startsWith("/v1/segments/") && path.length > 13) {
      return segments(req, path.slice(13));
    }
    if (PROBE_PATHS.has(path)) return probes(req, path);
    if (path === "/openapi.json") {
      if (req.method !== "GET" && req.method !== "HEAD") {
        return errorResponse(405, "method_not_allowed", "use GET", { allow: allowOf(path) });
      }
      openApiText ??= JSON.stringify(openApiDocument(basePath), null, 2) + "\n";
      return text(200, openApiText, { "content-type": JSON_TYPE });
    }
    if (PAGE_PATHS.has(path)) return page(req, path);
    return errorResponse(404, "not_found", "no such endpoint");
  };
}

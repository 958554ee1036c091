/**
 * The unauthenticated mode (`auth: "none"`, `KVID_AUTH=none`) kept out of web pages' reach: a
 * page of another site, or one that rebinds its own DNS name to 127.0.0.1, can make a browser
 * send requests to a loopback service. Without tokens nothing else stops them, so this guard
 * answers such requests before the router sees them (docs/security.md, "The unauthenticated
 * mode").
 *
 * @module
 */

import { hostName, isLoopbackHost, validHost } from "./host.ts";
import { errorResponse } from "./respond.ts";

/**
 * Answers a request of the unauthenticated mode that a web page may have sent, or undefined:
 *
 * - a Host (the URL's authority without one) that is neither a loopback name nor one of
 *   `allowedHosts`: 403 (DNS rebinding: the page's own name, pointed at 127.0.0.1);
 * - an `Origin` of another host, `Origin: null`, or `Sec-Fetch-Site` other than `same-origin`
 *   and `none`: 403 (a page of another site, even a port of the same host);
 * - to `/v1/ids`, `/v1/daily` and a counter-changing `/v1/segments` request (anything but
 *   `GET .../step`): a method other than POST (PUT for the step) is 405, and a `Content-Type`
 *   other than `application/json` is 415: the requests a page can send without a CORS preflight
 *   (`<img>`, forms, `fetch` in `no-cors` mode) are GETs or carry one of the form types.
 *   A POST without a body and without a `Content-Type` is not refused: every browser sends
 *   `Origin` with a POST, which the rule above answers.
 *
 * `/healthz` and `/readyz` are answered to any host (probes address the service by its IP; they
 * tell nothing).
 *
 * @param allowedHosts Host names (without port, lower case) answered beside the loopback ones.
 * @param basePath The prefix the service is mounted under (`""`: the root).
 */
export function openGuard(
  allowedHosts: ReadonlySet<string>,
  basePath: string,
): (req: Request) => Response | undefined {
  const refuse = (why: string) => errorResponse(403, "forbidden", why);
  return (req) => {
    const raw = req.url;
    // The path as the router cuts it, not new URL()'s, which resolves dot segments and reads
    // each backslash as a slash: an ID path could pass here as a probe's path.
    const start = raw.indexOf("/", raw.indexOf("//") + 2);
    const end = raw.slice(start).search(/[?#]/);
    let path = start < 0 ? "/" : end < 0 ? raw.slice(start) : raw.slice(start, start + end);
    if (basePath !== "" && path.startsWith(basePath)) path = path.slice(basePath.length) || "/";
    if (path === "/healthz" || path === "/readyz") return undefined;
    const host = req.headers.get("host") ?? new URL(raw).host;
    if (!validHost(host)) return errorResponse(400, "bad_request", "the Host is not host[:port]");
    const name = hostName(host);
    if (!isLoopbackHost(name) && !allowedHosts.has(name)) {
      return refuse(
        `without tokens the service answers loopback names only (and KVID_ALLOWED_HOSTS), ` +
          `not ${JSON.stringify(name.slice(0, 100))}: a page may point its own name at 127.0.0.1`,
      );
    }
    const origin = req.headers.get("origin");
    if (origin !== null && !sameHost(origin, host)) {
      return refuse("without tokens the service answers no page of another origin");
    }
    const site = req.headers.get("sec-fetch-site");
    if (site !== null && site !== "same-origin" && site !== "none") {
      return refuse(`without tokens the service answers no ${site} request of a browser`);
    }
    const counts = path.startsWith("/v1/ids/") || path.startsWith("/v1/daily/") ||
      (path.startsWith("/v1/segments/") && req.method !== "GET" && req.method !== "HEAD");
    if (!counts) return undefined;
    const method = path.startsWith("/v1/segments/") && path.endsWith("/step") ? "PUT" : "POST";
    if (req.method !== method) {
      return errorResponse(
        405,
        "method_not_allowed",
        `without tokens, IDs and counter changes take ${method} with ` +
          "Content-Type: application/json (no web page can send that to another origin)",
        { allow: method },
      );
    }
    const type = req.headers.get("content-type");
    if (type !== null && !/^application\/json\s*(;|$)/i.test(type)) {
      return errorResponse(
        415,
        "unsupported_media_type",
        `without tokens, IDs and counter changes take Content-Type: application/json, not ${
          JSON.stringify(type.slice(0, 100))
        }`,
      );
    }
    return undefined;
  };
}

/** Whether the `Origin` header names the host `host` (any scheme: TLS may end in front). */
function sameHost(origin: string, host: string): boolean {
  try {
    return new URL(origin).host.toLowerCase() === host.toLowerCase();
  } catch {
    return false; // "null" (sandboxed frames, privacy redirects) and garbage
  }
}

/**
 * The hosts the unauthenticated mode answers beside loopback names: `allowedHosts` given, lower
 * case, each a host without port. Throws a TypeError on one that is not.
 */
export function allowedHostsOf(allowedHosts: readonly string[] | undefined): Set<string> {
  if (allowedHosts === undefined) return new Set();
  if (!Array.isArray(allowedHosts)) {
    throw new TypeError("kvid service: allowedHosts must be an array of host names");
  }
  return new Set(allowedHosts.map((h) => {
    if (typeof h !== "string" || !validHost(h) || hostName(h) !== h.toLowerCase()) {
      throw new TypeError(
        `kvid service: allowedHosts: ${JSON.stringify(h)} is not a host name without a port`,
      );
    }
    return h.toLowerCase();
  }));
}

/**
 * The request's host, read strictly: a `Host` header (or the authority of an absolute-form
 * target) is `host[:port]` and nothing else, so no header can choose the route; and which
 * hosts are loopback names (the unauthenticated mode answers those, and configured ones, only).
 *
 * @module
 */

/**
 * `host[:port]`: a DNS name or IPv4 address (letters, digits, `.`, `-`, `_`, `~`), or an IPv6
 * address in brackets, then an optional port of 1 to 5 digits. Narrower than RFC 3986's
 * reg-name (no sub-delims, no percent-encoding): enough for every real host, and nothing that
 * can end the authority of a URL (`/`, `?`, `#`, `@`) or join two headers (`,`, a space).
 */
const HOST = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/** Whether `value` is a `Host` header of the form `host[:port]` (port at most 65535). */
export function validHost(value: string): boolean {
  if (!HOST.test(value)) return false;
  const colon = value.lastIndexOf(":");
  return colon < 0 || value.endsWith("]") || Number(value.slice(colon + 1)) <= 65_535;
}

/** The host of `host[:port]` without its port, lower case, brackets kept (`[::1]`). */
export function hostName(authority: string): string {
  const v6 = authority.startsWith("[");
  const end = v6 ? authority.indexOf("]") + 1 : authority.lastIndexOf(":");
  return (end <= 0 ? authority : authority.slice(0, end)).toLowerCase();
}

/** The port of `host[:port]`, or undefined without one. */
export function hostPort(authority: string): number | undefined {
  const colon = authority.lastIndexOf(":");
  if (colon < 0 || authority.endsWith("]")) return undefined;
  return Number(authority.slice(colon + 1));
}

/** Whether `host` (without port) is a loopback name: `localhost`, 127.0.0.0/8 or `[::1]`. */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * A target the URL parser would turn into another path: a dot segment (`.`, `..`, also as
 * `%2e`) or a backslash (read as `/`) in the path, or a fragment (dropped). A proxy that allows
 * or blocks by path sees the target as sent (`/healthz/../v1/ids/order`,
 * `/v1/ids/x\..\..\segments\order`); the route would be the rewritten one.
 */
const REWRITTEN = /^[^?]*(?:\\|\/(?:\.|%2e){1,2}(?:[/?]|$))|#/i;

/** The outcome of reading a request's target: the URL to route, or the reason for a 400. */
export type TargetUrl = { url: string } | { bad: string };

/**
 * The URL of a request as the listener at `port` reads it (RFC 9112 3.2): an origin-form target
 * (`/path?query`) with the `Host` header, an absolute-form one (`http://host[:port]/path`) whose
 * port is the listener's and whose `Host`, if sent, is the same authority. HTTP/1.1 without a
 * `Host` is refused; HTTP/1.0 without one gets `fallback`.
 */
export function targetUrl(
  target: string,
  host: string | null,
  http10: boolean,
  fallback: string,
  port: number,
): TargetUrl {
  if (REWRITTEN.test(target)) {
    return { bad: "the target's path has a dot segment, a backslash or a fragment" };
  }
  if (target.startsWith("/")) {
    if (host === null) {
      return http10 ? { url: `http://${fallback}${target}` } : { bad: "HTTP/1.1 needs a Host" };
    }
    return validHost(host)
      ? { url: `http://${host}${target}` }
      : { bad: "the Host header is not host[:port]" };
  }
  const m = /^http:\/\/([^/?#]*)([/?][^#]*)?$/i.exec(target);
  if (m === null) return { bad: "the target is neither a path nor an http:// URL" };
  const authority = m[1];
  if (!validHost(authority)) return { bad: "the target's authority is not host[:port]" };
  if ((hostPort(authority) ?? 80) !== port) {
    return { bad: `the target names a port other than this listener's (${port})` };
  }
  if (host !== null && host.toLowerCase() !== authority.toLowerCase()) {
    return { bad: "the Host header differs from the target's authority" };
  }
  const rest = m[2] ?? "/";
  return { url: `http://${authority}${rest.startsWith("?") ? "/" + rest : rest}` };
}

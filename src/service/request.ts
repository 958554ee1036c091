/**
 * Reading a request safely: whether a browser sent it from this site, and its body within a
 * byte limit.
 *
 * @module
 */

/**
 * False when a browser says the request comes from another site. By host, not scheme: behind a
 * TLS-terminating proxy the page is https while the request reaching us is http.
 */
export function sameOrigin(req: Request): boolean {
  const origin = req.headers.get("origin");
  if (origin === null) return true; // not a browser, or a same-origin GET-like navigation
  try {
    return new URL(origin).host === (req.headers.get("host") ?? new URL(req.url).host);
  } catch {
    return false; // "null" (sandboxed frames, privacy redirects) and garbage
  }
}

/** The body as text, or undefined (and the rest cancelled) past `max` bytes, chunked or not. */
export async function readLimited(req: Request, max: number): Promise<string | undefined> {
  if (req.body === null) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(bytes);
}

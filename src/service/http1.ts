/**
 * HTTP/1.1 on the wire for the service's listener: a request head parsed, a request body read as
 * a stream (by length or chunked, within the limits), a response written buffered, and the
 * listener's own error answers. What the listener does not do: HTTP/2, TLS, upgrades.
 *
 * @module
 */

import type { Connection } from "./connection.ts";
import type { ListenerLimits } from "./listener_options.ts";

// Header values as sent: Latin-1 maps each byte to one character.
const LATIN1 = new TextDecoder("latin1");
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REASONS: Record<number, string> = {
  100: "Continue",
  200: "OK",
  303: "See Other",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  413: "Content Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
};

/** A request the listener answers itself with `status`, then closes. */
export class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** A parsed request head. */
export interface Head {
  method: string;
  target: string;
  http10: boolean;
  headers: Headers;
}

/**
 * Parse a request head (request line and headers, without the blank line).
 *
 * @throws {HttpError} 400 for a malformed line or header.
 */
export function parseHead(bytes: Uint8Array): Head {
  // Latin-1: the bytes as they are; header values that are not ASCII stay what was sent.
  const text = LATIN1.decode(bytes);
  const lines = text.split("\r\n");
  const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP\/1\.([01])$/.exec(lines[0]);
  if (m === null) throw new HttpError(400, "a malformed request line");
  const headers = new Headers();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    const name = colon > 0 ? line.slice(0, colon) : "";
    if (!TOKEN.test(name)) throw new HttpError(400, "a malformed header line");
    try {
      headers.append(name, line.slice(colon + 1).trim());
    } catch {
      throw new HttpError(400, "a malformed header value");
    }
  }
  return { method: m[1], target: m[2], http10: m[3] === "0", headers };
}

/**
 * Write `res` on `c` as an HTTP/1.1 response, buffered whole, with `content-length`, `date` and
 * (unless `keep`) `connection: close`; a HEAD request gets the headers only.
 */
export async function respond(
  c: Connection,
  res: Response,
  head: Head | undefined,
  keep: boolean,
  ioTimeoutMs: number,
): Promise<void> {
  const whole = res.body === null ? new Uint8Array(0) : new Uint8Array(await res.arrayBuffer());
  const body = head?.method === "HEAD" ? new Uint8Array(0) : whole;
  let text = `HTTP/1.1 ${res.status} ${REASONS[res.status] ?? "Status"}\r\n`;
  for (const [name, value] of res.headers) {
    if (name !== "content-length" && name !== "connection" && name !== "transfer-encoding") {
      text += `${name}: ${value}\r\n`;
    }
  }
  text += `content-length: ${whole.length}\r\ndate: ${new Date().toUTCString()}\r\n`;
  text += keep ? "\r\n" : "connection: close\r\n\r\n";
  const headBytes = new TextEncoder().encode(text);
  const out = new Uint8Array(headBytes.length + body.length);
  out.set(headBytes);
  out.set(body, headBytes.length);
  await c.write(out, ioTimeoutMs);
}

/** The listener's own answer to a request it cannot hand on (a malformed or oversized one). */
export function plainError(status: number, message: string): Response {
  return new Response(JSON.stringify({ error: { code: "bad_request", message } }) + "\n", {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  });
}

/**
 * The request body as a stream over the connection, or null; `state.done` once fully read. A
 * body past `limits.maxBodyBytes` is a 413; each read armed with `limits.ioTimeoutMs` in all.
 *
 * @throws {HttpError} A malformed or oversized body announcement.
 */
export function bodyOf(
  c: Connection,
  head: Head,
  state: { done: boolean },
  limits: Pick<ListenerLimits, "maxBodyBytes" | "ioTimeoutMs">,
): ReadableStream<Uint8Array> | null {
  const te = head.headers.get("transfer-encoding");
  const cl = head.headers.get("content-length");
  if (te !== null) {
    if (te.trim().toLowerCase() !== "chunked" || cl !== null) {
      throw new HttpError(400, "only Transfer-Encoding: chunked, without Content-Length");
    }
    return chunkedBody(c, state, limits);
  }
  if (cl === null) {
    state.done = true;
    return null;
  }
  if (!/^[0-9]{1,15}$/.test(cl.trim())) throw new HttpError(400, "a malformed Content-Length");
  let left = Number(cl.trim());
  if (left > limits.maxBodyBytes) {
    throw new HttpError(413, `the body is over ${limits.maxBodyBytes} bytes`);
  }
  if (left === 0) {
    state.done = true;
    return null;
  }
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      c.armBody(limits.ioTimeoutMs);
      if (c.buffered === 0 && !(await c.fill())) {
        c.disarm();
        controller.error(new Error("the connection closed before the body ended"));
        return;
      }
      c.disarm();
      const chunk = c.take(Math.min(left, c.buffered));
      left -= chunk.length;
      controller.enqueue(chunk);
      if (left === 0) {
        state.done = true;
        controller.close();
      }
    },
  });
}

function chunkedBody(
  c: Connection,
  state: { done: boolean },
  limits: Pick<ListenerLimits, "maxBodyBytes" | "ioTimeoutMs">,
): ReadableStream<Uint8Array> {
  let size = 0;
  const line = async (): Promise<string> => {
    for (;;) {
      const view = c.peek(c.buffered);
      const at = view.indexOf(10);
      if (at >= 0) {
        const text = LATIN1.decode(c.take(at + 1));
        return text.replace(/\r?\n$/, "");
      }
      if (c.buffered > 1024) throw new Error("a chunk line over 1 KiB");
      if (!(await c.fill())) throw new Error("the connection closed inside the body");
    }
  };
  let chunkLeft = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      c.armBody(limits.ioTimeoutMs);
      try {
        if (chunkLeft === 0) {
          const n = parseInt((await line()).split(";")[0].trim(), 16);
          if (!Number.isInteger(n) || n < 0) throw new Error("a malformed chunk size");
          if (n === 0) {
            while ((await line()) !== ""); // trailers
            state.done = true;
            c.disarm();
            controller.close();
            return;
          }
          size += n;
          if (size > limits.maxBodyBytes) throw new Error("the body is too large");
          chunkLeft = n;
        }
        if (c.buffered === 0 && !(await c.fill())) throw new Error("closed inside the body");
        const chunk = c.take(Math.min(chunkLeft, c.buffered));
        chunkLeft -= chunk.length;
        if (chunkLeft === 0) {
          if (c.buffered < 2) await c.fill();
          if (c.buffered < 2) throw new Error("closed inside the body");
          c.take(2);
        }
        c.disarm();
        controller.enqueue(chunk);
      } catch (err) {
        c.disarm();
        controller.error(err);
      }
    },
  });
}

// Closing with unread input makes the kernel reset the connection, which can destroy the
// answer on its way: say we are done writing, then read and drop what the client still sends
// (at most a body's worth, for at most a second) before closing.
/** Finish writing, then drop what the client still sends, for at most a second. */
export async function linger(
  c: Connection,
  limits: Pick<ListenerLimits, "maxBodyBytes" | "maxHeaderBytes">,
): Promise<void> {
  await c.conn.closeWrite();
  c.arm(1_000, "ioTimeout");
  let dropped = 0;
  while (dropped < limits.maxBodyBytes + limits.maxHeaderBytes) {
    dropped += c.buffered;
    c.take(c.buffered);
    if (!(await c.fill())) break;
  }
  c.disarm();
}

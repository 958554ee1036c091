/**
 * Bearer tokens of the ID service (`KVID_TOKENS`) and the browser sessions of its status page.
 *
 * @module
 */

import { errorResponse } from "./respond.ts";

/** The names a token may ask IDs of: every name, or a set. */
export type Scope = "*" | ReadonlySet<string>;

/** Whether `scope` covers `name`. */
export function inScope(scope: Scope, name: string): boolean {
  return scope === "*" || scope.has(name);
}

const MAX_TOKEN_BYTES = 1024;

/**
 * Parse `"<token>:<names>,<token>:<names>"`, names `*` or `a|b|c`. Throws a TypeError naming the
 * position of a bad entry, never the token itself (it is a secret).
 */
export function parseTokens(spec: string): Map<string, Scope> {
  const tokens = new Map<string, Scope>();
  const entries = spec.split(",").map((e) => e.trim()).filter((e) => e !== "");
  if (entries.length === 0) throw new TypeError("KVID_TOKENS has no token");
  entries.forEach((entry, i) => {
    const at = entry.lastIndexOf(":");
    const token = at < 0 ? "" : entry.slice(0, at);
    const names = at < 0 ? "" : entry.slice(at + 1);
    if (token === "" || names === "") {
      throw new TypeError(`KVID_TOKENS entry ${i + 1} is not <token>:<names>`);
    }
    if (token.length < 16) {
      throw new TypeError(`KVID_TOKENS entry ${i + 1}: the token is shorter than 16 characters`);
    }
    if (token.length > MAX_TOKEN_BYTES || !/^[\x21-\x7e]+$/.test(token)) {
      throw new TypeError(
        `KVID_TOKENS entry ${i + 1}: a token is printable ASCII without spaces, at most ` +
          `${MAX_TOKEN_BYTES} characters`,
      );
    }
    if (tokens.has(token)) throw new TypeError(`KVID_TOKENS entry ${i + 1} repeats a token`);
    tokens.set(token, names === "*" ? "*" : new Set(names.split("|").filter((n) => n !== "")));
  });
  return tokens;
}

/** Checks presented tokens against the configured ones in constant time. */
export class TokenAuth {
  // Each token's characters as numbers, so the compare reads one string, not two: where
  // node-redis 5 is loaded (`class VerbatimString extends String`), V8 stops inlining
  // `String.prototype.charCodeAt`, and each call costs several times an inlined one (Deno 2.9.6).
  readonly #tokens: { codes: Uint16Array; scope: Scope }[];

  constructor(tokens: Map<string, Scope>) {
    this.#tokens = [...tokens].map(([token, scope]) => ({
      codes: Uint16Array.from(token, (c) => c.charCodeAt(0)),
      scope,
    }));
  }

  /** The scope of `token`, or undefined when it matches none. */
  check(token: string): Scope | undefined {
    return this.#match(token, 0);
  }

  /** The scope of the token `text.slice(start)`, read in place, or undefined. */
  #match(text: string, start: number): Scope | undefined {
    let found: Scope | undefined;
    // Every configured token is compared over its whole length, match or not, so the time
    // depends on neither where a guess differs nor which token it matched. Tokens are ASCII
    // (checked by parseTokens), so UTF-16 code units are the bytes sent.
    const length = text.length - start;
    for (let k = 0; k < this.#tokens.length; k++) {
      const { codes: t, scope } = this.#tokens[k];
      let diff = length ^ t.length;
      for (let i = 0; i < t.length; i++) diff |= t[i] ^ (charCodeAt(text, start + i) | 0);
      if (diff === 0) found = scope;
    }
    return found;
  }

  /** The scope of a request's `Authorization: Bearer <token>`, or undefined. */
  fromRequest(req: Request): Scope | undefined {
    const header = req.headers.get("authorization");
    if (header === null || header.length > MAX_TOKEN_BYTES + 16) return undefined;
    // The usual form, `Bearer <token>` with one space, is compared in place (cheaper than the
    // regex). A match there is BEARER's match too: a configured token has no
    // whitespace (parseTokens). Any other header, and a token that matches none, is read by
    // BEARER, whose answer it is.
    if (header.startsWith("Bearer ")) {
      const scope = this.#match(header, 7);
      if (scope !== undefined) return scope;
    }
    const m = BEARER.exec(header);
    return m === null ? undefined : this.check(m[1]);
  }
}

const CHAR_CODE_AT = String.prototype.charCodeAt;

/**
 * `text.charCodeAt(i)`, for a string through the builtin itself: V8 inlines a call of that
 * constant but not the method looked up on the string, once a subclass of `String` exists that
 * was never instantiated (node-redis 5's `VerbatimString`): then each lookup and call costs
 * several times an inlined one, a visible share of a request for a typical token
 * (bench/service_handler_bench.ts). Anything else
 * string-like (a test's counting probe) through its own method.
 */
function charCodeAt(text: string, i: number): number {
  return typeof text === "string"
    ? CHAR_CODE_AT.call(text, i)
    : (text as unknown as string).charCodeAt(i);
}

/** The `Authorization` header's form: `Bearer <token>`, "Bearer" in any case. */
const BEARER = /^Bearer[ ]+(\S+)\s*$/i;

/** The scope of a request: its token's, or every name without auth; undefined: refused. */
export type ScopeOf = (req: Request) => Scope | undefined;

/** The {@linkcode ScopeOf} of `auth` (undefined: `auth: "none"`, every request sees every name). */
export function scopeOf(auth: TokenAuth | undefined): ScopeOf {
  return auth === undefined ? () => "*" : (req) => auth.fromRequest(req);
}

/** The 401 answer of a request without a valid token. */
export function unauthorized(): Response {
  return errorResponse(
    401,
    "unauthorized",
    "a valid token is required: Authorization: Bearer <token>",
    { "www-authenticate": 'Bearer realm="kvid"' },
  );
}

const SESSION_COOKIE = "kvid_session";
const SESSION_MS = 12 * 3600_000;
const MAX_SESSIONS = 1_000;

/**
 * Status-page sessions: a form posts the token once, the browser then holds only a random
 * session id in an HttpOnly, SameSite=Strict cookie (Secure over https), so no token ever sits
 * in a URL, the page, or script reach.
 */
export class Sessions {
  readonly #sessions = new Map<string, { scope: Scope; expires: number }>();
  readonly #path: string;

  /** Sessions whose cookie is sent for `path` and below (the service's base path). */
  constructor(path = "/") {
    this.#path = path;
  }

  /** Open a session for `scope`: the `Set-Cookie` value. */
  open(scope: Scope, secure: boolean): string {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const id = btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
      .replace(/=+$/, "");
    if (this.#sessions.size >= MAX_SESSIONS) {
      // Map order is insertion order: drop the oldest.
      this.#sessions.delete(this.#sessions.keys().next().value!);
    }
    this.#sessions.set(id, { scope, expires: Date.now() + SESSION_MS });
    return cookie(id, SESSION_MS / 1000, secure, this.#path);
  }

  /** The scope of the request's session cookie, or undefined. */
  fromRequest(req: Request): Scope | undefined {
    const id = sessionId(req);
    if (id === undefined) return undefined;
    const session = this.#sessions.get(id);
    if (session === undefined) return undefined;
    if (!(Date.now() < session.expires)) {
      this.#sessions.delete(id);
      return undefined;
    }
    return session.scope;
  }

  /** End the request's session: the `Set-Cookie` value that clears it. */
  close(req: Request, secure: boolean): string {
    const id = sessionId(req);
    if (id !== undefined) this.#sessions.delete(id);
    return cookie("", 0, secure, this.#path);
  }
}

function sessionId(req: Request): string | undefined {
  const header = req.headers.get("cookie");
  if (header === null) return undefined;
  for (const part of header.split(";")) {
    const [k, v] = part.trim().split("=", 2);
    if (k === SESSION_COOKIE && v !== undefined && /^[A-Za-z0-9_-]{43}$/.test(v)) return v;
  }
  return undefined;
}

function cookie(value: string, maxAge: number, secure: boolean, path: string): string {
  return `${SESSION_COOKIE}=${value}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict` +
    (secure ? "; Secure" : "");
}

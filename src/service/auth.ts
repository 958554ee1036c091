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
 * What a configured token may do: the names it may ask IDs of, and whether it is
 * administrative (`<token>:admin=<names>` in `KVID_TOKENS`): only an administrative token may
 * raise a counter past its value plus one maximum segment, or remember a step above the
 * segment cap (docs/security.md, "Raises and steps").
 */
export interface Grant {
  /** The names it covers. */
  readonly scope: Scope;
  /** Whether raises and step writes on those names are unbounded. */
  readonly admin: boolean;
}

/** A request's {@linkcode Grant}, and which configured token made it (never the token). */
export interface Holder extends Grant {
  /** The token's position in `KVID_TOKENS` (0-based); -1 without auth: one holder for all. */
  readonly holder: number;
}

/** The prefix of an administrative entry's names: `<token>:admin=*`, `<token>:admin=a|b`. */
const ADMIN_PREFIX = "admin=";

/**
 * Parse `"<token>:<names>,<token>:<names>"`, names `*` or `a|b|c`, `admin=` before them for an
 * administrative token. Throws a TypeError naming the position of a bad entry, never the token
 * itself (it is a secret).
 */
export function parseGrants(spec: string): Map<string, Grant> {
  const tokens = new Map<string, Grant>();
  const entries = spec.split(",").map((e) => e.trim()).filter((e) => e !== "");
  if (entries.length === 0) throw new TypeError("KVID_TOKENS has no token");
  entries.forEach((entry, i) => {
    const at = entry.lastIndexOf(":");
    const token = at < 0 ? "" : entry.slice(0, at);
    let names = at < 0 ? "" : entry.slice(at + 1);
    const admin = names.startsWith(ADMIN_PREFIX);
    if (admin) names = names.slice(ADMIN_PREFIX.length);
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
    const scope = names === "*" ? "*" : new Set(names.split("|").filter((n) => n !== ""));
    tokens.set(token, { scope, admin });
  });
  return tokens;
}

/** {@linkcode parseGrants}, the names only. */
export function parseTokens(spec: string): Map<string, Scope> {
  return new Map([...parseGrants(spec)].map(([token, grant]) => [token, grant.scope]));
}

/** Checks presented tokens against the configured ones in constant time. */
export class TokenAuth {
  // Each token's characters as numbers, so the compare reads one string, not two: where
  // node-redis 5 is loaded (`class VerbatimString extends String`), V8 stops inlining
  // `String.prototype.charCodeAt`, and each call costs several times an inlined one (Deno 2.9.6).
  readonly #tokens: { codes: Uint16Array; scope: Scope; holder: Holder }[];

  /** Tokens with their names ({@linkcode parseTokens}) or grants ({@linkcode parseGrants}). */
  constructor(tokens: Map<string, Scope | Grant>) {
    this.#tokens = [...tokens].map(([token, given], holder) => {
      const grant = typeof given === "object" && "admin" in given
        ? given
        : { scope: given as Scope, admin: false };
      return {
        codes: Uint16Array.from(token, (c) => c.charCodeAt(0)),
        scope: grant.scope,
        holder: { scope: grant.scope, admin: grant.admin, holder },
      };
    });
  }

  /** The scope of `token`, or undefined when it matches none. */
  check(token: string): Scope | undefined {
    const k = this.#match(token, 0);
    return k < 0 ? undefined : this.#tokens[k].scope;
  }

  /** The position of the token `text.slice(start)` among the configured ones, or -1. */
  #match(text: string, start: number): number {
    let found = -1;
    // Every configured token is compared over its whole length, match or not, so the time
    // depends on neither where a guess differs nor which token it matched. Tokens are ASCII
    // (checked by parseTokens), so UTF-16 code units are the bytes sent.
    const length = text.length - start;
    for (let k = 0; k < this.#tokens.length; k++) {
      const t = this.#tokens[k].codes;
      let diff = length ^ t.length;
      for (let i = 0; i < t.length; i++) diff |= t[i] ^ (charCodeAt(text, start + i) | 0);
      if (diff === 0) found = k;
    }
    return found;
  }

  /** The scope of a request's `Authorization: Bearer <token>`, or undefined. */
  fromRequest(req: Request): Scope | undefined {
    const k = this.#fromHeader(req);
    return k < 0 ? undefined : this.#tokens[k].scope;
  }

  /** The {@linkcode Holder} of a request's `Authorization: Bearer <token>`, or undefined. */
  holderOf(req: Request): Holder | undefined {
    const k = this.#fromHeader(req);
    return k < 0 ? undefined : this.#tokens[k].holder;
  }

  /** The position of a request's bearer token among the configured ones, or -1. */
  #fromHeader(req: Request): number {
    const header = req.headers.get("authorization");
    if (header === null || header.length > MAX_TOKEN_BYTES + 16) return -1;
    // The usual form, `Bearer <token>` with one space, is compared in place (cheaper than the
    // regex). A match there is BEARER's match too: a configured token has no
    // whitespace (parseTokens). Any other header, and a token that matches none, is read by
    // BEARER, whose answer it is.
    if (header.startsWith("Bearer ")) {
      const k = this.#match(header, 7);
      if (k >= 0) return k;
    }
    const m = BEARER.exec(header);
    return m === null ? -1 : this.#match(m[1], 0);
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

/** What a request may do: its token's grant, or all names without auth; undefined: refused. */
export type HolderOf = (req: Request) => Holder | undefined;

/** Without auth every caller is one holder of every name, never administrative. */
const NO_AUTH: Holder = { scope: "*", admin: false, holder: -1 };

/** The {@linkcode HolderOf} of `auth` (undefined: `auth: "none"`). */
export function holderOf(auth: TokenAuth | undefined): HolderOf {
  return auth === undefined ? () => NO_AUTH : (req) => auth.holderOf(req);
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

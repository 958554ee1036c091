/**
 * `GET /` (the status page, or its sign-in form), `POST /login` (a token posted once, for a
 * session cookie) and `POST /logout`. The HTML itself is `page.ts`'s.
 *
 * @module
 */

import type { Scope, Sessions, TokenAuth } from "./auth.ts";
import type { Entry, Generators } from "./generators.ts";
import { loginPage, PAGE_CSP, statusPage } from "./page.ts";
import type { Readiness } from "./readiness.ts";
import { readLimited, sameOrigin } from "./request.ts";
import { errorResponse } from "./respond.ts";

/** The paths {@linkcode pageRoutes} answers. */
export const PAGE_PATHS: ReadonlySet<string> = new Set(["/", "/login", "/logout"]);

const MAX_FORM_BYTES = 4_096;

/** What {@linkcode pageRoutes} reads. */
export interface PageRoutesOptions {
  /** The tokens; undefined: no auth, every visitor sees everything. */
  auth: TokenAuth | undefined;
  sessions: Sessions;
  generators: Generators;
  ready: () => Promise<Readiness>;
  storeLabel: string;
  /** The prefix the service is mounted under (`""`: the root). */
  basePath: string;
}

/** The status page of one service: answers a request for one of {@linkcode PAGE_PATHS}. */
export function pageRoutes(
  options: PageRoutesOptions,
): (req: Request, path: string) => Promise<Response> {
  const { auth, sessions, generators, ready, storeLabel, basePath } = options;
  const html = (status: number, body: string, headers: Record<string, string> = {}) =>
    new Response(body, {
      status,
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
        "content-security-policy": PAGE_CSP,
        "x-frame-options": "DENY",
        "referrer-policy": "same-origin", // "no-referrer" makes form posts send Origin: null
        ...headers,
      },
    });
  const secure = (req: Request) =>
    new URL(req.url).protocol === "https:" || req.headers.get("x-forwarded-proto") === "https";

  /**
   * IDs/s of the last 5 minutes: all of them for a token of every name (closed generators'
   * traffic included), else the sum of the generators it may see.
   */
  const chartSeries = (scope: Scope, visible: Entry[], now: number): number[] => {
    if (scope === "*") return generators.rates.series(now);
    const sum = generators.rates.series(now).fill(0);
    for (const e of visible) e.rates.series(now).forEach((n, i) => sum[i] += n);
    return sum;
  };

  return async (req, path) => {
    if (path === "/login" || path === "/logout") {
      if (req.method !== "POST") {
        return errorResponse(405, "method_not_allowed", "use POST", { allow: "POST" });
      }
      if (!sameOrigin(req)) {
        // Another site's form posting here (login CSRF): browsers send its Origin.
        return errorResponse(403, "forbidden", "the form was posted from another site");
      }
      if (path === "/logout") {
        return html(303, "", {
          location: `${basePath}/`,
          "set-cookie": sessions.close(req, secure(req)),
        });
      }
      const form = await readLimited(req, MAX_FORM_BYTES);
      if (form === undefined) {
        return errorResponse(413, "request_too_large", `the form is over ${MAX_FORM_BYTES} bytes`);
      }
      const token = new URLSearchParams(form).get("token") ?? "";
      const scope = auth === undefined ? "*" : auth.check(token);
      if (scope === undefined) return html(401, loginPage(true, basePath));
      return html(303, "", {
        location: `${basePath}/`,
        "set-cookie": sessions.open(scope, secure(req)),
      });
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      return errorResponse(405, "method_not_allowed", "use GET", { allow: "GET, HEAD" });
    }
    const scope = auth === undefined ? "*" : sessions.fromRequest(req);
    if (scope === undefined) return html(200, loginPage(false, basePath));
    const now = Date.now();
    const visible = generators.visibleTo(scope);
    const rows = visible.map((e) => e.snapshot(now))
      .sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : a.kind < b.kind ? -1 : 1);
    return html(
      200,
      statusPage(rows, chartSeries(scope, visible, now), {
        store: storeLabel,
        ready: await ready(),
        nowMs: now,
        base: basePath,
      }),
    );
  };
}

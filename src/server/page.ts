/**
 * The status page and its sign-in form: plain HTML with inline CSS and an inline SVG chart, no
 * script and no external asset, so it works offline and under a strict CSP.
 *
 * @module
 */

import type { GeneratorSnapshot } from "./generators.ts";

/** The page's Content-Security-Policy: nothing but inline styles and a form posting home. */
export const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'";

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1d2330;background:#f6f7f9}
h1{font-size:1.3rem;margin:0 0 .2rem} .sub{color:#5b6475;margin:0 0 1rem}
table{border-collapse:collapse;background:#fff;width:100%} th,td{padding:.35rem .6rem;
border-bottom:1px solid #e3e6eb;text-align:right;white-space:nowrap} th:first-child,
td:first-child,th:nth-child(2),td:nth-child(2){text-align:left} th{background:#eef1f5}
.err{color:#b42318} .ok{color:#067647} .card{background:#fff;padding:.8rem;margin:0 0 1rem;
border:1px solid #e3e6eb} form{display:inline} input{font:inherit;padding:.3rem}
button{font:inherit;padding:.3rem .8rem}`;

/** Escape text for HTML. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function layout(title: string, body: string, refresh: boolean): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refresh ? '<meta http-equiv="refresh" content="5">' : ""}
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body>${body}</body></html>
`;
}

/** The sign-in form; `failed` after a wrong token (which is never echoed). */
export function loginPage(failed: boolean): string {
  return layout(
    "kvid: sign in",
    `<h1>kvid ID service</h1><p class="sub">Sign in with a service token to see the status.</p>
<div class="card"><form method="post" action="/login">
<label>Token <input type="password" name="token" autocomplete="current-password" required
autofocus></label> <button type="submit">Sign in</button></form>
${failed ? '<p class="err" role="alert">That token is not valid.</p>' : ""}</div>`,
    false,
  );
}

/** An SVG line chart of `series` (one value per second, oldest first). */
function rateChart(series: number[], width = 720, height = 140): string {
  let max = 1;
  for (const v of series) if (v > max) max = v;
  const step = series.length > 1 ? width / (series.length - 1) : width;
  const points = series.map((v, i) =>
    `${(i * step).toFixed(1)},${(height - (v / max) * (height - 10)).toFixed(1)}`
  ).join(" ");
  const label = `IDs per second over the last ${Math.round(series.length / 60)} minutes, peak ${
    Math.round(max)
  }`;
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height + 18}" width="100%"
role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title>
<rect width="${width}" height="${height}" fill="#fff" stroke="#e3e6eb"/>
<polyline fill="none" stroke="#2e6bd9" stroke-width="1.5" points="${points}"/>
<text x="4" y="14" font-size="11" fill="#5b6475">${Math.round(max)} IDs/s</text>
<text x="0" y="${height + 14}" font-size="11" fill="#5b6475">-${
    Math.round(series.length / 60)
  } min</text>
<text x="${width}" y="${height + 14}" font-size="11" fill="#5b6475" text-anchor="end">now</text>
</svg>`;
}

function ago(ms: number | null, nowMs: number): string {
  if (ms === null) return "never";
  const s = Math.max(0, Math.round((nowMs - ms) / 1000));
  return s < 120 ? `${s} s ago` : `${Math.round(s / 60)} min ago`;
}

/** What the generators last heard of the store's durability, in words an operator acts on. */
function durabilityLine(rows: GeneratorSnapshot[]): string {
  const lossy = rows.find((r) => r.durable === false);
  if (lossy !== undefined) {
    const problems = lossy.durabilityProblems.join("; ").slice(0, 600);
    return `<span class="err">the store can lose IDs: ${escapeHtml(problems)}</span>`;
  }
  return rows.some((r) => r.durable === true)
    ? '<span class="ok">durable</span>'
    : "not reported yet";
}

/** The status page. */
export function statusPage(
  rows: GeneratorSnapshot[],
  series: number[],
  info: { store: string; notReady: string | undefined; nowMs: number; hidden: number },
): string {
  const body = rows.map((r) =>
    `<tr><td>${escapeHtml(r.name)}</td><td>${r.kind}${r.day ? ` ${r.day}` : ""}</td>
<td>${r.step}</td><td>${r.remaining}</td><td>${r.rate.toFixed(1)}</td><td>${r.issued}</td>
<td>${ago(r.lastReservationAt, info.nowMs)}</td><td>${
      r.lastReservationMs === null ? "" : `${r.lastReservationMs.toFixed(1)} ms`
    }</td><td>${r.failures}</td><td>${r.stalls}</td><td>${r.rollbacks}</td>
<td class="err">${r.lastError === null ? "" : escapeHtml(r.lastError.slice(0, 200))}</td></tr>`
  ).join("\n");
  return layout(
    "kvid: status",
    `<h1>kvid ID service</h1>
<p class="sub">Store: ${escapeHtml(info.store)}, <span class="${
      info.notReady === undefined ? "ok" : "err"
    }">${
      info.notReady === undefined ? "answering" : escapeHtml(info.notReady.slice(0, 600))
    }</span>. Durability: ${durabilityLine(rows)}. ${rows.length} live generator${
      rows.length === 1 ? "" : "s"
    }${info.hidden > 0 ? ` (${info.hidden} outside this token's scope)` : ""}. Refreshes every 5 s.
<form method="post" action="/logout"><button type="submit">Sign out</button></form></p>
<div class="card">${rateChart(series)}</div>
<table><thead><tr><th>name</th><th>kind</th><th>step</th><th>remaining</th><th>IDs/s</th>
<th>issued</th><th>last reservation</th><th>latency</th><th>failures</th><th>stalls</th>
<th>rollbacks</th><th>last error</th></tr></thead>
<tbody>${body || '<tr><td colspan="12">No generator yet.</td></tr>'}</tbody></table>`,
    true,
  );
}

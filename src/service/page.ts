/**
 * The status page and its sign-in form: plain HTML with inline CSS and an inline SVG chart, no
 * script and no external asset, so it works offline and under a strict CSP.
 *
 * @module
 */

import type { GeneratorSnapshot } from "./generators.ts";
import type { Readiness } from "./readiness.ts";

/** The page's Content-Security-Policy: nothing but inline styles and a form posting home. */
export const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'";

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1d2330;background:#f6f7f9}
h1{font-size:1.3rem;margin:0 0 .2rem} .sub{color:#5b6475;margin:0 0 1rem}
table{border-collapse:collapse;background:#fff;width:100%} th,td{padding:.35rem .6rem;
border-bottom:1px solid #e3e6eb;text-align:right;white-space:nowrap} th:first-child,
td:first-child,th:nth-child(2),td:nth-child(2){text-align:left} th{background:#eef1f5;white-space:normal}
.err{color:#b42318} .ok{color:#067647} .card{background:#fff;padding:.8rem;margin:0 0 1rem;
border:1px solid #e3e6eb} form{display:inline} input{font:inherit;padding:.3rem}
button{font:inherit;padding:.3rem .8rem} .scroll{overflow-x:auto}
.narrow,.hint{display:none} .hint{color:#5b6475;margin:0 0 .3rem}
@media (max-width:600px){body{margin:.6rem;font-size:13px} th,td{padding:.3rem .4rem}
.wide{display:none} .narrow,.hint{display:block}}`;

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
export function loginPage(failed: boolean, base = ""): string {
  return layout(
    "kvid: sign in",
    `<h1>kvid ID service</h1><p class="sub">Sign in with a service token to see the status.</p>
<div class="card"><form method="post" action="${escapeHtml(base)}/login">
<label>Token <input type="password" name="token" autocomplete="current-password" required
autofocus></label> <button type="submit">Sign in</button></form>
${failed ? '<p class="err" role="alert">That token is not valid.</p>' : ""}</div>`,
    false,
  );
}

/** A count for an axis label: 950, 1.2k, 35k, 1.5M. */
export function shortCount(n: number): string {
  if (n < 1_000) return String(Math.round(n));
  if (n < 1_000_000) return `${+(n / 1_000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${+(n / 1_000_000).toFixed(n < 10_000_000 ? 1 : 0)}M`;
}

/**
 * How the chart's y axis maps a rate: linear, or logarithmic (`log10(1 + v)`) when the peak is
 * over 20 times the median second with traffic, so one burst does not flatten the rest into the
 * baseline. Ticks: 0, half and the top (linear), or the powers of ten up to the peak (log).
 */
export function chartScale(series: number[]): {
  log: boolean;
  top: number;
  y(v: number): number;
  ticks: number[];
} {
  let peak = 0;
  for (const v of series) if (v > peak) peak = v;
  const busy = series.filter((v) => v > 0).sort((a, b) => a - b);
  const median = busy.length === 0 ? 0 : busy[busy.length >> 1];
  const log = median > 0 && peak > 20 * median;
  if (log) {
    const top = Math.log10(1 + peak);
    const ticks = [0];
    for (let p = 1; p <= peak; p *= 10) ticks.push(p);
    return { log, top: peak, y: (v) => Math.log10(1 + v) / top, ticks };
  }
  const top = Math.max(peak, 1);
  return { log, top, y: (v) => v / top, ticks: [0, top / 2, top] };
}

/** An SVG line chart of `series` (one value per second, oldest first), with labelled axes. */
function rateChart(series: number[], width = 720, height = 140): string {
  const left = 44; // room for the y labels
  const plot = width - left;
  const scale = chartScale(series);
  const peak = series.reduce((m, v) => v > m ? v : m, 0);
  const step = series.length > 1 ? plot / (series.length - 1) : plot;
  const y = (v: number) => (height - scale.y(v) * (height - 10)).toFixed(1);
  const points = series.map((v, i) => `${(left + i * step).toFixed(1)},${y(v)}`).join(" ");
  const minutes = Math.round(series.length / 60);
  const label = `IDs per second over the last ${minutes} minutes, peak ${Math.round(peak)}${
    scale.log ? " (log scale)" : ""
  }`;
  const yTicks = scale.ticks.map((t) =>
    `<line x1="${left}" x2="${width}" y1="${y(t)}" y2="${y(t)}" stroke="#eef1f5"/>
<text x="${left - 4}" y="${
      y(t)
    }" font-size="11" fill="#5b6475" text-anchor="end" dominant-baseline="middle">${
      shortCount(t)
    }</text>`
  ).join("\n");
  const xTicks: string[] = [];
  for (let m = minutes; m >= 0; m--) {
    const x = left + plot * (1 - m / Math.max(minutes, 1));
    xTicks.push(
      `<text x="${x.toFixed(1)}" y="${height + 14}" font-size="11" fill="#5b6475" text-anchor="${
        m === minutes ? "start" : m === 0 ? "end" : "middle"
      }">${m === 0 ? "now" : `-${m} min`}</text>`,
    );
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height + 18}" width="100%"
role="img" aria-label="${escapeHtml(label)}"><title>${escapeHtml(label)}</title>
<rect x="${left}" width="${plot}" height="${height}" fill="#fff" stroke="#e3e6eb"/>
${yTicks}
<polyline fill="none" stroke="#2e6bd9" stroke-width="1.5" points="${points}"/>
${xTicks.join("\n")}
<text x="${left + 4}" y="12" font-size="11" fill="#5b6475">IDs/s${
    scale.log ? " (log scale)" : ""
  }</text>
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
  info: {
    store: string;
    ready: Readiness;
    nowMs: number;
    base?: string;
  },
): string {
  const body = rows.map((r) =>
    `<tr><td>${escapeHtml(r.name)}</td><td>${r.kind}${r.day ? ` ${r.day}` : ""}</td>
<td>${r.step}</td><td>${r.remaining}</td><td>${r.rate.toFixed(1)}</td><td>${r.issued}</td>
<td>${ago(r.lastReservationAt, info.nowMs)}</td><td>${
      r.lastReservationMs === null ? "" : `${r.lastReservationMs.toFixed(1)} ms`
    }</td><td>${r.failedRequests}</td><td>${r.failures}</td><td>${r.stalls}</td><td>${r.rollbacks}</td>
<td class="err">${r.lastError === null ? "" : escapeHtml(r.lastError.slice(0, 200))}</td></tr>`
  ).join("\n");
  return layout(
    "kvid: status",
    `<h1>kvid ID service</h1>
<p class="sub">Store: ${escapeHtml(info.store)}, <span class="${
      info.ready.state === "up" ? "ok" : "err"
    }">${
      info.ready.state === "up"
        ? "answering"
        : info.ready.state === "starting"
        ? "connecting"
        : info.ready.state === "down"
        ? "not answering"
        : escapeHtml(info.ready.why.slice(0, 600))
    }</span>. Durability: ${durabilityLine(rows)}. ${rows.length} live generator${
      rows.length === 1 ? "" : "s"
    }. Refreshes every 5 s.
<form method="post" action="${
      escapeHtml(info.base ?? "")
    }/logout"><button type="submit">Sign out</button></form></p>
<div class="card"><div class="wide">${rateChart(series)}</div><div class="narrow">${
      // Drawn at a phone's width, so that its labels are read at their own size, not scaled down.
      rateChart(series, 340, 150)}</div></div>
<p class="hint">The table scrolls sideways: 13 columns &rarr;</p>
<div class="scroll"><table><thead><tr><th>name</th><th>kind</th><th>step</th><th>remaining</th><th>IDs/s</th>
<th>issued</th><th>last reservation</th><th>latency</th><th title="requests answered 5xx">failed
requests</th><th title="reservations failed or unanswered within the timeout">failed
reservations</th><th>stalls</th><th>rollbacks</th><th>last error</th></tr></thead>
<tbody>${body || '<tr><td colspan="13">No generator yet.</td></tr>'}</tbody></table></div>`,
    true,
  );
}

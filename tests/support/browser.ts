/** Headless chromium for the status-page test and its screenshot. */

import puppeteer from "puppeteer-core";

/** The chromium to drive: `$CHROMIUM`, else the first found on PATH. */
export function findChromium(): string | undefined {
  const given = Deno.env.get("CHROMIUM");
  if (given) return given;
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    for (const name of ["chromium", "chromium-browser", "google-chrome"]) {
      try {
        if (Deno.statSync(`${dir}/${name}`).isFile) return `${dir}/${name}`;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** Start headless chromium (no sandbox: CI runs as root), with `extraArgs` beside. */
export function launchBrowser(executablePath: string, extraArgs: string[] = []) {
  return puppeteer.launch({
    executablePath,
    headless: true,
    pipe: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--no-first-run",
      ...extraArgs,
    ],
  });
}

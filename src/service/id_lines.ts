/**
 * The text body of an ID answer: one decimal ID a line.
 *
 * @module
 */

// "000\n" to "999\n": the last three digits of an ID and its newline, looked up. A batch's IDs
// share their leading digits, printed once per thousand: faster than `${id}\n` each (measured
// interleaved, with the Response read).
// Each part appended on its own (`body += high; body += low`): no short flat string copied per
// ID, the rope flattened once when the Response encodes it, which made the service's count=100 answer
// faster against a hello-world handler (bench/service_handler_bench.ts). Measured worse there:
// `ids.join("\n")` (a number-to-string per ID), the run's table slice joined by the leading
// digits, pieces in an array joined, bytes written by hand and decoded.
const LOW3: readonly string[] = Array.from(
  { length: 1000 },
  (_, i) => `${String(i).padStart(3, "0")}\n`,
);

/** `ids` one a line, each followed by `\n`, as `${id}\n` would print them. */
export function idLines(ids: readonly (number | bigint | string)[]): string {
  let body = "";
  let highOf = -1;
  let high = "";
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (typeof id !== "number" || id < 1000 || !Number.isSafeInteger(id)) {
      body += `${id}\n`;
      continue;
    }
    const h = Math.floor(id / 1000);
    if (h !== highOf) {
      highOf = h;
      high = String(h);
    }
    body += high;
    body += LOW3[id - h * 1000];
  }
  return body;
}

/**
 * The IDs `first` to `first + count - 1` one a line, as {@linkcode idLines} prints them; `first`
 * and the last a safe integer. A run needs no array and no per-ID checks.
 */
export function runLines(first: number, count: number): string {
  const end = first + count;
  let id = first;
  let body = "";
  for (; id < end && id < 1000; id++) body += `${id}\n`;
  if (id === end) return body;
  let high = Math.floor(id / 1000);
  let low = id - high * 1000;
  let prefix = String(high);
  for (; id < end; id++) {
    body += prefix;
    body += LOW3[low];
    if (++low === 1000) {
      low = 0;
      prefix = String(++high);
    }
  }
  return body;
}

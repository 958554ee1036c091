/**
 * Option and argument validation shared by the generators: one wording for every bad value, a
 * `TypeError` for the wrong kind and a `RangeError` for a value out of range.
 *
 * @module
 */

/** Describe a bad value briefly for an error message. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value.slice(0, 40));
  if (typeof value === "object") return value.constructor?.name ?? "object";
  if (typeof value === "function") return "a function";
  return `${typeof value} ${String(value)}`;
}

/** `"KvId option minStep"` for an option, `"KvId nextBatch(count)"` for a method's argument. */
function argumentLabel(who: string, what: string): string {
  return what.includes("(") ? `${who} ${what}` : `${who} option ${what}`;
}

const MAX_NAME_BYTES = 4096;
const utf8 = new TextEncoder();

/** Throw a TypeError unless `value` is a non-empty, well-formed string of at most 4 KiB. */
export function checkName(who: string, what: string, value: unknown): asserts value is string {
  if (typeof value !== "string") {
    throw new TypeError(`${who} ${what} must be a string, got ${describe(value)}`);
  }
  if (value.length === 0) throw new TypeError(`${who} ${what} must not be empty`);
  if (!value.isWellFormed()) {
    throw new TypeError(`${who} ${what} must be well-formed Unicode (it has a lone surrogate)`);
  }
  // A UTF-16 unit is at most 3 UTF-8 bytes: a name this short is within the bound unencoded
  // (encoding it was a measurable share of a new generator's construction, most of it the call).
  if (value.length * 3 <= MAX_NAME_BYTES) return;
  const bytes = utf8.encode(value).length;
  if (bytes > MAX_NAME_BYTES) {
    throw new TypeError(`${who} ${what} is ${bytes} UTF-8 bytes, more than ${MAX_NAME_BYTES}`);
  }
}

/**
 * The control characters no counter name may hold: C0 (U+0000-U+001F, NUL, CR and LF among them),
 * DEL (U+007F) and C1 (U+0080-U+009F, where U+009B is a terminal's CSI): Unicode's `Cc`. Such a
 * name reaches logs, metric labels, the status page and a terminal raw, and `"\0..."` fields are
 * the library's own.
 */
const CONTROL = /\p{Cc}/u;

/**
 * What is wrong with `value` as a counter name, worded to follow "the name", or undefined:
 * {@linkcode checkName}'s rules and no control character ({@linkcode CONTROL}). The one rule of
 * `KvId`, `DailyId`, the CLI and every route of the service.
 */
export function counterNameProblem(value: string): string | undefined {
  const at = value.search(CONTROL);
  if (at < 0) return undefined;
  const code = value.charCodeAt(at).toString(16).toUpperCase().padStart(4, "0");
  return at === 0 && code === "0000"
    ? 'must not begin with a NUL byte ("\\0"): such fields are the library\'s own ("\\0step:<name>", "\\0layout:<name>")'
    : `must not hold a control character (U+${code} at index ${at}; C0, DEL and C1 are refused)`;
}

/**
 * {@linkcode checkName}, and {@linkcode counterNameProblem}: not beginning with NUL (fields that
 * begin with it are the library's own, `"\0step:<name>"`, `"\0layout:<name>"`, and a counter
 * named so would overwrite one) and no control character anywhere.
 */
export function checkCounterName(
  who: string,
  what: string,
  value: unknown,
): asserts value is string {
  checkName(who, what, value);
  const problem = counterNameProblem(value);
  if (problem !== undefined) throw new TypeError(`${who} ${what} ${problem}`);
}

/**
 * Throw unless `value` is a number from `min` to `max`; `aboveMax` is appended to the message
 * of a value above `max` (a hint what to do instead).
 */
export function checkNumber(
  who: string,
  what: string,
  value: unknown,
  min: number,
  max: number,
  aboveMax = "",
): void {
  const subject = argumentLabel(who, what);
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new TypeError(`${subject} must be a number, got ${describe(value)}`);
  }
  if (!(value >= min && value <= max)) {
    const hint = value > max ? aboveMax : "";
    throw new RangeError(`${subject} must be between ${min} and ${max}, got ${value}${hint}`);
  }
}

/** {@linkcode checkNumber}, and an integer. */
export function checkInteger(...args: Parameters<typeof checkNumber>): void {
  checkNumber(...args);
  const [who, what, value] = args;
  if (!Number.isInteger(value)) {
    throw new RangeError(`${argumentLabel(who, what)} must be an integer, got ${value}`);
  }
}

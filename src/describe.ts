/** Describe a bad value briefly for an error message. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value.slice(0, 40));
  if (typeof value === "object") return value.constructor?.name ?? "object";
  if (typeof value === "function") return "a function";
  return `${typeof value} ${String(value)}`;
}

/** `"KvId option minStep"` for an option, `"KvId nextBatch(count)"` for a method's argument. */
export function argumentLabel(who: string, what: string): string {
  return what.includes("(") ? `${who} ${what}` : `${who} option ${what}`;
}

/**
 * tmp
 * @module
 */
export * from "./codec.ts";
export * from "./radix.ts";
export * from "./affix.ts";
export * from "./ff1.ts";

/**
 * The option defaults are written once: `KVID_DEFAULTS` (src/engine/defaults.ts) is what the
 * generator uses, and each option's `@default` in src/engine/kvid_options.ts names the same value.
 */

import "./deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../mod.ts";
import { KVID_DEFAULTS } from "../src/engine/defaults.ts";
import { resolveOptions } from "../src/engine/settings.ts";

const source = await Deno.readTextFile(
  new URL("../src/engine/kvid_options.ts", import.meta.url),
);
const optionsInterface = source.slice(
  source.indexOf("export interface KvIdOptions {"),
  source.indexOf("\n}\n", source.indexOf("export interface KvIdOptions {")),
);

/** Each option of KvIdOptions with the text of its `@default` tag. */
function documentedDefaults(): Map<string, string> {
  const out = new Map<string, string>();
  const re = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*(\w+)\?:/g;
  for (const m of optionsInterface.matchAll(re)) {
    const tag = /@default \{(.*)\}\s*$/m.exec(m[1]);
    out.set(m[2], tag === null ? "" : tag[1]);
  }
  return out;
}

/** A `@default {...}` value as the code spells it, parsed. */
function parse(text: string): unknown {
  if (/^-?[\d_]+(\.\d+)?$/.test(text)) return Number(text.replaceAll("_", ""));
  return JSON.parse(text);
}

Deno.test("every option has one @default {value}, the one in KVID_DEFAULTS", () => {
  const documented = documentedDefaults();
  assert.ok(documented.size >= 20, `found ${documented.size} options`);
  for (const [name, tag] of documented) {
    assert.notEqual(tag, "", `option ${name} has no @default {value}`);
  }
  for (const [name, value] of Object.entries(KVID_DEFAULTS)) {
    assert.ok(documented.has(name), `KVID_DEFAULTS.${name} is not an option`);
    assert.deepEqual(parse(documented.get(name)!), value, `option ${name}'s @default`);
  }
  assert.ok(Object.isFrozen(KVID_DEFAULTS) && Object.isFrozen(KVID_DEFAULTS.serverSettings));
});

Deno.test("a generator without options runs on KVID_DEFAULTS", async () => {
  const s = resolveOptions("order", {});
  for (const [name, value] of Object.entries(KVID_DEFAULTS)) {
    const key = name === "rollbackMargin" ? "margin" : name; // held as a bigint
    const got = (s as unknown as Record<string, unknown>)[key];
    assert.deepEqual(name === "rollbackMargin" ? Number(got) : got, value, name);
  }
  assert.equal(s.initialStep, s.minStep, "initialStep: minStep");
  assert.equal(resolveOptions("order", { minStep: 2_000_000 }).maxStep, 2_000_000);
  const id = new KvId("order");
  assert.equal(id.key, KVID_DEFAULTS.key);
  assert.equal(id.stats().step, KVID_DEFAULTS.minStep);
  assert.equal(id.stats().durability.mode, KVID_DEFAULTS.durability);
  await id.close();
});

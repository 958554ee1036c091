/**
 * The option defaults are written once: `KVID_DEFAULTS` (src/engine/defaults.ts) is what the
 * generator uses, and each option's `@default` in src/engine/kvid_options.ts names the same value.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { KvId } from "../../mod.ts";
import { KVID_DEFAULTS, KVID_OPTIONS } from "../../src/engine/defaults.ts";
import { resolveOptions } from "../../src/engine/settings.ts";

const source = await Deno.readTextFile(
  new URL("../../src/engine/kvid_options.ts", import.meta.url),
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

Deno.test("docs/api.md's option table: the options of KVID_OPTIONS, with their defaults", async () => {
  const doc = await Deno.readTextFile(new URL("../../docs/api.md", import.meta.url));
  const section = doc.slice(
    doc.indexOf("## Options"),
    doc.indexOf("\n## ", doc.indexOf("## Options") + 1),
  );
  const rows = new Map<string, string>();
  for (const m of section.matchAll(/^\| `(\w+)` +\| ([^|]*?) +\|/gm)) rows.set(m[1], m[2]);
  assert.deepEqual([...rows.keys()].sort(), Object.keys(KVID_OPTIONS).sort());
  for (const [name, rule] of Object.entries(KVID_OPTIONS)) {
    if (rule.default === undefined) continue;
    const cell = /^`(.*)`( ms)?$/.exec(rows.get(name)!);
    assert.ok(cell !== null, `docs/api.md: ${name}'s default ${rows.get(name)}`);
    assert.deepEqual(parse(cell[1]), rule.default, `docs/api.md: ${name}'s default`);
  }
});

import "../support/deadline.ts";
import assert from "node:assert/strict";
import {
  layoutViolations,
  relativeImports,
  testLayoutViolations,
} from "../../tools/layout_rule.ts";

Deno.test("layout: the engine and DailyId import only the contract; no store reaches up", async () => {
  const violations = await layoutViolations(new URL("../../", import.meta.url));
  assert.deepEqual(violations, [], "imports that break the rule of tools/layout_rule.ts");
});

Deno.test("layout: an engine file importing a store is caught, whatever the import's form", async () => {
  const root = await Deno.makeTempDir({ prefix: "kvid-layout-" });
  try {
    const at = (p: string) => `${root}/${p}`;
    for (const d of ["src/engine", "src/contract", "src/stores/redis", "src/daily"]) {
      await Deno.mkdir(at(d), { recursive: true });
    }
    await Deno.writeTextFile(at("src/contract/store.ts"), "export type Store = unknown;\n");
    await Deno.writeTextFile(at("src/stores/redis/redis_store.ts"), "export const x = 1;\n");
    await Deno.writeTextFile(
      at("src/engine/kvid.ts"),
      [
        'import type { Store } from "../contract/store.ts";',
        "import {",
        "  x,",
        '} from "../stores/redis/redis_store.ts";',
        'export type { Store } from "../stores/redis/redis_store.ts";',
        'import "../stores/redis/redis_store.ts";',
        'const late = () => import("../stores/redis/redis_store.ts");',
        "",
      ].join("\n"),
    );
    await Deno.writeTextFile(
      at("src/daily/daily.ts"),
      'import { KvId } from "../engine/kvid.ts";\nimport "../stores/redis/redis_store.ts";\n',
    );
    const found = await layoutViolations(new URL(`file://${root}/`));
    assert.deepEqual(
      found.map((v) => `${v.file} -> ${v.imports}`).sort(),
      [
        "src/daily/daily.ts -> src/stores/redis/redis_store.ts",
        ...Array(4).fill("src/engine/kvid.ts -> src/stores/redis/redis_store.ts"),
      ],
    );
    assert.equal(relativeImports('import type { A } from "./a.ts";').length, 1);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("layout: the runtime sees only the contract; a store imports nothing of daily/", async () => {
  const root = await Deno.makeTempDir({ prefix: "kvid-layout-" });
  try {
    const at = (p: string) => `${root}/${p}`;
    for (const d of ["src/runtime", "src/stores/sql", "src/engine", "src/contract", "src/daily"]) {
      await Deno.mkdir(at(d), { recursive: true });
    }
    const files: Record<string, string> = {
      "src/contract/errors.ts": "export const e = 1;\n",
      "src/daily/calendar.ts": "export const c = 1;\n",
      "src/engine/kvid.ts": 'import { s } from "../runtime/shutdown.ts";\n',
      "src/runtime/shutdown.ts":
        'import { e } from "../contract/errors.ts";\nimport { k } from "../engine/kvid.ts";\n',
      "src/stores/sql/table_values.ts": [
        'import { s } from "../../runtime/shutdown.ts";',
        'import { e } from "../../contract/errors.ts";',
        'import { c } from "../../daily/calendar.ts";',
        "",
      ].join("\n"),
    };
    for (const [path, text] of Object.entries(files)) await Deno.writeTextFile(at(path), text);
    const found = await layoutViolations(new URL(`file://${root}/`));
    assert.deepEqual(found.map((v) => `${v.file} -> ${v.imports}`).sort(), [
      "src/runtime/shutdown.ts -> src/engine/kvid.ts",
      "src/stores/sql/table_values.ts -> src/daily/calendar.ts",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("layout of tests/: the checkout keeps it", async () => {
  assert.deepEqual(await testLayoutViolations(new URL("../../", import.meta.url)), []);
});

Deno.test("layout of tests/: a test out of its area, a stray helper, a twin name, an import of a test", async () => {
  const root = await Deno.makeTempDir({ prefix: "kvid-layout-" });
  try {
    const at = (p: string) => `${root}/${p}`;
    for (const d of ["tests/support", "tests/engine", "tests/service", "tests/node"]) {
      await Deno.mkdir(at(d), { recursive: true });
    }
    const files: Record<string, string> = {
      "tests/support/deadline.ts": "export const d = 1;\n",
      "tests/support/helper.ts": 'import { x } from "../engine/kvid_test.ts";\n',
      "tests/support/stray_test.ts": "",
      "tests/engine/kvid_test.ts": 'import "../support/deadline.ts";\nexport const x = 1;\n',
      "tests/service/kvid_test.ts": 'import "../support/deadline.ts";\n',
      "tests/service/page_test.ts": 'import { x } from "../engine/kvid_test.ts";\n',
      "tests/top_test.ts": "",
      "tests/engine/worker.ts": "",
      "tests/mutations.ts": "",
      "tests/mutate.ts": 'import "../mutations.ts";\n',
      "tests/node/types_check.mts": "",
    };
    for (const [path, text] of Object.entries(files)) await Deno.writeTextFile(at(path), text);
    assert.deepEqual(await testLayoutViolations(new URL(`file://${root}/`)), [
      "tests/engine/worker.ts: a module that is not a test goes in tests/support/",
      "tests/service/kvid_test.ts: tests/engine/kvid_test.ts has the same name",
      "tests/service/page_test.ts imports the test file tests/engine/kvid_test.ts",
      "tests/support/helper.ts imports the test file tests/engine/kvid_test.ts",
      "tests/support/stray_test.ts: tests/support/ holds helpers, not test files",
      "tests/top_test.ts: a test file goes in an area folder",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

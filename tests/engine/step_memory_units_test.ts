/**
 * Unit tests of the remembered step's policy (src/engine/step_memory.ts): whether it is looked
 * up at all, what counts as a change worth writing, when a write is due (handed the time), and
 * what a save writes and remembers. The store is a plain object with the two methods (the
 * policy's seam); the same memory on real servers is in tests/engine/flow_control_test.ts.
 * Starts no server.
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import type { Store } from "../../src/contract/store.ts";
import { type MemorySettings, StepMemory } from "../../src/engine/step_memory.ts";
import { StepSizer } from "../../src/engine/step.ts";

const SETTINGS: MemorySettings = {
  minStep: 1,
  maxStep: 1_000,
  rememberStep: true,
  initialStepGiven: false,
  key: "kvid",
};

/** A store that remembers steps, and what it was asked. */
function memoryStore(step?: number) {
  const saved: [string, string, number][] = [];
  const store = {
    reserve: () => Promise.reject(new Error("not used")),
    loadStep: () => Promise.resolve(step),
    saveStep: (key: string, field: string, s: number) => {
      saved.push([key, field, s]);
      return Promise.resolve();
    },
  } as Store;
  return { store, saved };
}

function memory(settings: Partial<MemorySettings> = {}) {
  const sizer = new StepSizer(1, 1_000, 600_000, "doubling");
  return { sizer, memory: new StepMemory(sizer, { ...SETTINGS, ...settings }, "order") };
}

Deno.test("StepMemory: looked up only when remembered and no initialStep was given", async () => {
  const cases: [boolean, boolean, boolean][] = [
    [true, false, false],
    [true, true, true],
    [false, false, true],
    [false, true, true],
  ];
  for (const [rememberStep, initialStepGiven, loaded] of cases) {
    const { memory: m } = memory({ rememberStep, initialStepGiven });
    assert.equal(m.loaded, loaded, `rememberStep ${rememberStep}, initialStep ${initialStepGiven}`);
  }
  const { memory: m } = memory();
  assert.equal(await m.lookUp(memoryStore(64).store, 1_000), 64);
  assert.equal(m.loaded, true);
  const plain = { reserve: () => Promise.reject(new Error("not used")) } as Store;
  assert.equal(await memory().memory.lookUp(plain, 1_000), undefined, "a store without memory");
  const failing = { ...memoryStore().store, loadStep: () => Promise.reject(new Error("down")) };
  assert.equal(await memory().memory.lookUp(failing, 1_000), undefined, "a failed read");
});

Deno.test("StepMemory: a change is a step unlike the remembered one, minStep alone is none", () => {
  const { sizer, memory: m } = memory();
  assert.equal(sizer.step, 1);
  assert.equal(m.changed(), false, "never left minStep: nothing to remember");
  sizer.resume(500);
  assert.equal(m.changed(), true, "grown, nothing remembered yet");
  m.found(500);
  assert.equal(m.changed(), false, "the remembered step itself");
  sizer.resume(1);
  assert.equal(m.changed(), true, "back at minStep from a remembered 500");
  m.found(1);
  assert.equal(m.changed(), false);
});

Deno.test("StepMemory: a write is due 10 s after the first reservation, then 10 s apart", () => {
  const { sizer, memory: m } = memory();
  sizer.resume(500);
  assert.equal(m.dueAt(6_000), false, "the first reservation starts the clock");
  assert.equal(m.dueAt(7_000), false);
  assert.equal(m.dueAt(15_999), false);
  assert.equal(m.dueAt(16_000), true, "10 s after the first");
  assert.equal(m.dueAt(17_000), false, "10 s after the last write");
  assert.equal(m.dueAt(26_000), true);
  m.found(sizer.step);
  assert.equal(m.dueAt(40_000), false, "unchanged: never due");
});

Deno.test("StepMemory: save writes the step and remembers it; nowhere to write, nothing kept", async () => {
  const { sizer, memory: m } = memory();
  sizer.resume(250);
  await m.save(undefined);
  assert.equal(m.changed(), true, "no store: still to be written");
  await m.save({ reserve: () => Promise.reject(new Error("not used")) } as Store);
  assert.equal(m.changed(), true, "a store without memory: still to be written");
  const { store, saved } = memoryStore();
  await m.save(store);
  assert.deepEqual(saved, [["kvid", "order", 250]]);
  assert.equal(m.changed(), false);
  const off = memory({ rememberStep: false });
  off.sizer.resume(250);
  const other = memoryStore();
  await off.memory.save(other.store);
  assert.deepEqual(other.saved, [], "rememberStep: false writes nothing");
  assert.equal(off.memory.changed(), true);
  // A failed write is forgiven (best effort); the step counts as written.
  const failing = { ...memoryStore().store, saveStep: () => Promise.reject(new Error("down")) };
  sizer.resume(500);
  await m.save(failing);
  assert.equal(m.changed(), false);
});

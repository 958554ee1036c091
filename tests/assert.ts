/** Assertions shared by the test files. */

import assert from "node:assert/strict";
import { KvIdError } from "../mod.ts";

/** Fail unless every ID is greater than the one before it. */
export function assertIncreasing(
  ids: ArrayLike<number | bigint | string>,
  what = "ids",
): void {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i] > ids[i - 1])) {
      assert.fail(`${what}: not increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
    }
  }
}

/** Await `p` and fail unless it rejects with a KvIdError of `code` (matching `message`). */
export async function rejectsWith(
  p: Promise<unknown>,
  code: string,
  message?: RegExp,
): Promise<KvIdError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof KvIdError, `expected a KvIdError, got ${err}`);
    assert.equal(err.code, code, `code of: ${err.message}`);
    if (message) assert.match(err.message, message);
    return err;
  }
  return assert.fail(`expected a KvIdError ${code}`);
}

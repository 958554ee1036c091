/**
 * A time limit on every test: Deno has no per-test timeout, so a test that hangs (a loop that
 * never ends, a promise nobody settles) would hang the suite, or be killed without saying which
 * test it was. Importing this module (every test file does, first) wraps `Deno.test` so each test
 * races a timer: past its limit it fails with `did not finish within N ms`, naming the test.
 *
 * The limit is {@linkcode DEFAULT_LIMIT_MS}, or `KVID_TEST_LIMIT_MS` from the environment (the
 * mutation runner, `tests/mutate.ts`, sets a shorter one). It is far above what any test takes on
 * a loaded machine: it turns a hang into a failure, it does not measure speed. A loop that never
 * yields to the event loop (microtasks only) cannot be stopped from inside the process; the
 * mutation runner bounds the whole run too.
 *
 * @module
 */

/** The limit per test, in ms, unless `KVID_TEST_LIMIT_MS` says otherwise. */
export const DEFAULT_LIMIT_MS = 300_000;

type TestFn = (t: Deno.TestContext) => void | Promise<void>;

const MARK = Symbol.for("kvid.test.deadline");

let override: number | undefined;

/**
 * Give the tests this module registers from now on `ms` each instead of the default: for a test
 * that is slow by design (and ignored unless asked for), say `tests/codec/codec_slow_test.ts`.
 * `KVID_TEST_LIMIT_MS` still wins, so the mutation run keeps its bound.
 */
export function setTestLimit(ms: number): void {
  override = ms;
}

/** The limit each test gets, in ms. */
export function testLimitMs(): number {
  let env: string | undefined;
  try {
    env = Deno.env.get("KVID_TEST_LIMIT_MS");
  } catch {
    env = undefined; // no --allow-env: the default
  }
  const ms = env === undefined ? NaN : Number(env);
  return Number.isFinite(ms) && ms > 0 ? ms : override ?? DEFAULT_LIMIT_MS;
}

/** `fn`, failing with a named error once `ms` passed without it settling. */
export function withLimit(name: string, ms: number, fn: TestFn): TestFn {
  return async function (t: Deno.TestContext): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(`test "${name}" did not finish within ${ms} ms (tests/support/deadline.ts)`),
          ),
        ms,
      );
    });
    try {
      await Promise.race([fn(t), limit]);
    } finally {
      clearTimeout(timer);
    }
  };
}

function install(): void {
  const g = Deno as unknown as Record<PropertyKey, unknown>;
  if (g[MARK] === true) return;
  const original = Deno.test;
  // Every overload of Deno.test: (fn), (name, fn), (name, options, fn), (options, fn), (options).
  const wrapped = function (...args: unknown[]): void {
    const ms = testLimitMs();
    const fnAt = args.findIndex((a) => typeof a === "function");
    const def = args.find((a) => typeof a === "object" && a !== null) as
      | Deno.TestDefinition
      | undefined;
    if (fnAt >= 0) {
      const fn = args[fnAt] as TestFn;
      const name = typeof args[0] === "string" ? args[0] : def?.name ?? fn.name;
      const copy = [...args];
      copy[fnAt] = withLimit(name, ms, fn);
      // A definition with no name of its own takes the function's: keep the original name.
      if (typeof args[0] === "function") copy.unshift(name);
      return (original as (...a: unknown[]) => void).apply(Deno, copy);
    }
    if (def !== undefined && typeof def.fn === "function") {
      return original({ ...def, fn: withLimit(def.name, ms, def.fn) });
    }
    return (original as (...a: unknown[]) => void).apply(Deno, args);
  };
  Object.assign(wrapped, original);
  g.test = wrapped;
  g[MARK] = true;
}

install();

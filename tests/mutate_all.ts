/**
 * The systematic mutation run: mutants generated from the code itself (its TypeScript syntax
 * tree, `npm:typescript`), one at a time, over the files the guarantee rests on, each against
 * the test files of its module. Where `tests/mutate.ts` applies hand-made bugs, this one applies
 * every operator swap it finds (StrykerJS's mutators, less string literals: those are messages),
 * so a condition no test depends on shows up without anyone guessing it.
 *
 * `deno task mutate:all [filter...]` (a filter keeps the files whose path contains it); not part
 * of `deno task test` (it takes hours). `--list` prints the mutants, numbered per file, without
 * running them; `--ids=3,17,40-45` runs only those numbers and `--lines=120-180` only the mutants
 * on those lines (to re-run survivors, or a file in parts); `--tests=a_test.ts,b_test.ts` runs
 * those test files instead of the target's list (a fast pass on unit tests alone). Runs niced,
 * one mutant at a time, each test file run killed after {@linkcode MUTANT_LIMIT_MS} (a hang counts
 * as killed, said as such). Prints one line per surviving mutant and, per file,
 * `file: N mutants, K killed, S survived, E equivalent` (equivalent: listed in
 * {@linkcode EQUIVALENT} with a reason), then the total.
 *
 * Mutators: relational (`<` to `<=` and `>=`, ...), equality (`===` to `!==`), logical (`&&`
 * to `||`, `??` to `&&`), arithmetic (`+` to `-`, ...), assignment (`+=` to `-=`, ...), update
 * (`++` to `--`), unary (`!x` to `x`, `-x` to `x`), boolean literals, conditions (of `if`,
 * `while`, `for`, `?:`) to `true` and to `false`, and block bodies emptied.
 *
 * @module
 */

import ts from "typescript";

/** One file and the test files that should kill its mutants (fastest first). */
export interface Target {
  /** Repository-relative path. */
  file: string;
  /** Test files run, in this order, until one fails. */
  tests: readonly string[];
}

/** The files the guarantee rests on, smallest and most central first. */
export const TARGETS: readonly Target[] = [
  {
    file: "src/engine/give_back.ts",
    tests: [
      "tests/engine/give_back_units_test.ts",
      "tests/engine/edge_cases_audit_test.ts",
      "tests/engine/edge_cases_test.ts",
      "tests/engine/give_back_test.ts",
    ],
  },
  {
    file: "src/engine/user_floor.ts",
    tests: [
      "tests/engine/user_floor_units_test.ts",
      "tests/engine/edge_cases_audit_test.ts",
      "tests/stores/redis/redis_losses_test.ts",
    ],
  },
  { file: "src/cli/exit.ts", tests: ["tests/cli/cli_test.ts"] },
  {
    file: "src/cli/commands/durability.ts",
    tests: ["tests/cli/cli_durability_exit_test.ts", "tests/cli/cli_test.ts"],
  },
  {
    file: "src/engine/step.ts",
    tests: [
      "tests/engine/step_units_test.ts",
      "tests/engine/flow_control_test.ts",
      "tests/engine/edge_cases_test.ts",
    ],
  },
  {
    file: "src/runtime/deadline_timer.ts",
    tests: [
      "tests/runtime/deadline_timer_units_test.ts",
      "tests/runtime/deadline_timer_test.ts",
      "tests/faults/blocked_loop_test.ts",
    ],
  },
  {
    file: "src/stores/postgres/postgres_errors.ts",
    tests: [
      "tests/stores/sql/sql_errors_units_test.ts",
      "tests/stores/postgres/postgres_store_test.ts",
    ],
  },
  {
    file: "src/stores/mysql/mysql_errors.ts",
    tests: ["tests/stores/sql/sql_errors_units_test.ts", "tests/stores/mysql/mysql_store_test.ts"],
  },
  {
    file: "src/stores/redis/confirm.ts",
    tests: [
      "tests/stores/redis/confirm_units_test.ts",
      "tests/faults/wait_aof_test.ts",
      "tests/faults/crash_aof_test.ts",
      "tests/stores/redis/redis_replicas_test.ts",
    ],
  },
  {
    file: "src/client/http_store.ts",
    tests: [
      "tests/client/http_store_units_test.ts",
      "tests/client/http_store_replies_test.ts",
      "tests/client/http_store_test.ts",
    ],
  },
  {
    file: "src/codec/radix.ts",
    tests: ["tests/codec/codec_edges_test.ts", "tests/codec/codec_test.ts"],
  },
  { file: "src/codec/ff1.ts", tests: ["tests/codec/ff1_test.ts", "tests/codec/codec_test.ts"] },
  {
    file: "src/engine/durability_gate.ts",
    tests: [
      "tests/engine/durability_gate_units_test.ts",
      "tests/engine/edge_cases_audit_test.ts",
      "tests/stores/redis/redis_first_reservation_test.ts",
      "tests/faults/states_test.ts",
    ],
  },
  {
    file: "src/engine/reservation.ts",
    tests: [
      "tests/engine/reservation_units_test.ts",
      "tests/engine/flow_control_test.ts",
      "tests/engine/edge_cases_test.ts",
      "tests/engine/edge_cases_audit_test.ts",
      "tests/engine/kvid_test.ts",
    ],
  },
  {
    file: "src/engine/segment_buffer.ts",
    tests: [
      "tests/engine/segment_buffer_units_test.ts",
      "tests/engine/reservation_units_test.ts",
      "tests/engine/give_back_units_test.ts",
      "tests/engine/segment_flow_test.ts",
      "tests/engine/kvid_test.ts",
    ],
  },
  {
    file: "src/engine/segment.ts",
    tests: ["tests/engine/segment_buffer_units_test.ts", "tests/engine/segment_flow_test.ts"],
  },
  {
    file: "src/stores/interleaved/layout.ts",
    tests: [
      "tests/stores/interleaved/interleaved_units_test.ts",
      "tests/stores/interleaved/interleaved_mixed_test.ts",
    ],
  },
  {
    file: "src/stores/interleaved/interleaved_store.ts",
    tests: [
      "tests/stores/interleaved/interleaved_units_test.ts",
      "tests/stores/interleaved/interleaved_timing_units_test.ts",
      "tests/stores/interleaved/interleaved_members_test.ts",
      "tests/stores/interleaved/interleaved_mixed_test.ts",
      "tests/stores/interleaved/interleaved_redis_test.ts",
    ],
  },
  {
    file: "src/stores/deno_kv/deno_kv_store.ts",
    tests: [
      "tests/stores/deno_kv/deno_kv_units_test.ts",
      "tests/stores/deno_kv/deno_kv_store_test.ts",
    ],
  },
  {
    file: "src/contract/durability.ts",
    tests: [
      "tests/contract/durability_units_test.ts",
      "tests/engine/durability_gate_units_test.ts",
      "tests/stores/interleaved/interleaved_units_test.ts",
    ],
  },
  { file: "src/engine/prefetch.ts", tests: ["tests/engine/prefetch_test.ts"] },
  { file: "src/engine/outage.ts", tests: ["tests/engine/outage_test.ts"] },
  {
    file: "src/engine/step_memory.ts",
    tests: [
      "tests/engine/step_memory_units_test.ts",
      "tests/engine/reservation_units_test.ts",
      "tests/engine/flow_control_test.ts",
    ],
  },
  {
    file: "src/engine/wait_queue.ts",
    tests: ["tests/engine/wait_queue_units_test.ts", "tests/engine/flow_control_test.ts"],
  },
  {
    file: "src/stores/redis/replies.ts",
    tests: [
      "tests/stores/redis/replies_units_test.ts",
      "tests/stores/redis/redis_exact_replies_test.ts",
      "tests/stores/redis/redis_first_reservation_test.ts",
      "tests/stores/redis/redis_losses_test.ts",
    ],
  },
  {
    file: "src/stores/redis/first_reservation.ts",
    tests: [
      "tests/stores/redis/first_reservation_units_test.ts",
      "tests/stores/redis/redis_first_reservation_test.ts",
      "tests/stores/redis/redis_losses_test.ts",
    ],
  },
  {
    file: "src/stores/redis/redis_store.ts",
    tests: [
      "tests/stores/redis/redis_store_units_test.ts",
      "tests/stores/redis/redis_first_reservation_test.ts",
      "tests/stores/redis/redis_exact_replies_test.ts",
      "tests/stores/redis/redis_counters_test.ts",
      "tests/stores/redis/redis_losses_test.ts",
      "tests/stores/interleaved/interleaved_redis_test.ts",
      "tests/stores/store_spec_test.ts",
    ],
  },
  {
    file: "src/contract/store_errors.ts",
    tests: [
      "tests/contract/store_errors_units_test.ts",
      "tests/engine/error_reasons_test.ts",
      "tests/stores/open_store_test.ts",
      "tests/faults/setup_test.ts",
      "tests/faults/input_test.ts",
      "tests/engine/kvid_test.ts",
      "tests/faults/states_test.ts",
    ],
  },
  {
    file: "src/stores/deno_kv/deno_kv_errors.ts",
    tests: [
      "tests/stores/deno_kv/deno_kv_errors_units_test.ts",
      "tests/stores/deno_kv/deno_kv_store_test.ts",
    ],
  },
  {
    file: "src/stores/redis/durability_probe.ts",
    tests: [
      "tests/stores/redis/durability_probe_units_test.ts",
      "tests/stores/redis/redis_first_reservation_test.ts",
      "tests/stores/redis/redis_losses_test.ts",
      "tests/engine/durability_shared_test.ts",
      "tests/stores/redis/redis_replicas_test.ts",
    ],
  },
  {
    file: "src/stores/redis/counters.ts",
    tests: [
      "tests/stores/redis/counters_units_test.ts",
      "tests/stores/redis/redis_counters_test.ts",
    ],
  },
  {
    file: "src/stores/redis/adapters.ts",
    tests: [
      "tests/stores/redis/adapters_units_test.ts",
      "tests/stores/redis/redis_exact_replies_test.ts",
      "tests/stores/redis/redis_replicas_test.ts",
      "tests/faults/listener_test.ts",
      "tests/engine/options_test.ts",
      "tests/stores/redis/redis_cluster_test.ts",
      "tests/stores/redis/redis_sentinel_test.ts",
    ],
  },
  {
    file: "src/cli/durability_check.ts",
    tests: ["tests/cli/cli_durability_test.ts", "tests/cli/cli_durability_exit_test.ts"],
  },
  {
    file: "src/cli/commands/next.ts",
    tests: ["tests/cli/cli_test.ts", "tests/cli/cli_durability_test.ts"],
  },
  {
    file: "src/stores/sql/table_values.ts",
    tests: [
      "tests/stores/sql/table_values_units_test.ts",
      "tests/stores/mysql/mysql_store_test.ts",
      "tests/stores/postgres/postgres_store_test.ts",
      "tests/stores/sql/sql_store_spec_test.ts",
    ],
  },
  {
    file: "src/stores/sql/sql_table_store.ts",
    tests: [
      "tests/stores/sql/sql_table_store_units_test.ts",
      "tests/stores/mysql/mysql_store_test.ts",
      "tests/stores/postgres/postgres_store_test.ts",
      "tests/stores/sql/sql_store_spec_test.ts",
      "tests/stores/interleaved/interleaved_sql_test.ts",
    ],
  },
  {
    file: "src/stores/postgres/postgres_store.ts",
    tests: [
      "tests/stores/postgres/postgres_store_test.ts",
      "tests/stores/sql/sql_store_spec_test.ts",
      "tests/stores/postgres/postgres_failover_test.ts",
    ],
  },
  {
    file: "src/stores/mysql/mysql_store.ts",
    tests: ["tests/stores/mysql/mysql_store_test.ts", "tests/stores/sql/sql_store_spec_test.ts"],
  },
];

/**
 * Mutants shown equivalent (no test can tell them apart from the code): keyed by
 * `file|trimmed line|original|replacement`, with why.
 */
export const EQUIVALENT: Readonly<Record<string, string>> = {
  "src/stores/sql/sql_table_store.ts|const floor = options.guard && options.floor > 0n ? options.floor : 0n;|>|>=":
    "a floor of 0 chosen either way is 0n",
  "src/stores/sql/sql_table_store.ts|const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;|>|>=":
    "a raiseTo equal to MAX_ID capped to MAX_ID is the same bigint",
  "src/stores/sql/sql_table_store.ts|if (this.#ready === ready) this.#ready = undefined;|this.#ready === ready|true":
    "this runs as the rejected check's reaction; its other reactions are #call continuations that only rethrow, so no new check can start before it",
  "src/engine/user_floor.ts|if (floor > this.value) this.value = floor;|>|>=":
    "an answer equal to the value kept assigns the same bigint",
  "src/cli/durability_check.ts|if (store.durability === undefined) return;|store.durability === undefined|false":
    "every store the CLI opens (Redis, PostgreSQL, MySQL, interleaved) has durability()",
  "src/cli/commands/next.ts|guard: false,|false|true":
    "with floor 0 a guard has nothing to raise: a counter is never below 0",
  "src/cli/commands/next.ts|exact: true,|true|false":
    "the CLI's node-redis client reads integers exactly (strings) and SQL replies bigints: exact is read only for a client that rounds",
  "src/cli/commands/durability.ts|const d = store.durability === undefined|store.durability === undefined|false":
    "every store the CLI opens (Redis, PostgreSQL, MySQL, interleaved) has durability()",
  "src/cli/commands/durability.ts|? { durable: true, settings: {}, problems: [] }|true|false":
    "every store the CLI opens has durability(): this fallback is never taken",
  // The ramp-up: outlast = ceil(rate * tripMs * 8) is <= 0 unless both are positive (tripMs is
  // never negative, a rate never NaN: now > since), and a step is >= 1: the guard only skips it.
  "src/engine/step.ts|if (tripMs > 0 && rate > 0) {|tripMs > 0 && rate > 0|true":
    "without both positive, outlast <= 0 never exceeds a step >= 1",
  "src/engine/step.ts|if (tripMs > 0 && rate > 0) {|&&|||":
    "with either not positive, outlast <= 0 never exceeds a step >= 1",
  "src/engine/step.ts|if (tripMs > 0 && rate > 0) {|>|>= #1":
    "tripMs 0 makes outlast 0, which never exceeds a step >= 1",
  "src/engine/step.ts|if (tripMs > 0 && rate > 0) {|>|>= #2":
    "rate 0 makes outlast 0, which never exceeds a step >= 1",
  "src/engine/step.ts|if (outlast > this.step) this.step = Math.min(outlast, this.#max);|>|>=":
    "outlast equal to the step sets min(step, maxStep), the step itself",
  "src/runtime/deadline_timer.ts|let idle = false;|false|true":
    "idle is read only while a timer exists, and the first arm() (disarm) sets it false first",
  'src/runtime/deadline_timer.ts|return typeof t === "object" && t !== null &&|&&||| #1':
    "setTimeout returns an object with ref/unref (Deno 2, Node, Bun), never null or a bare object",
  'src/runtime/deadline_timer.ts|return typeof t === "object" && t !== null &&|&&||| #2':
    "setTimeout returns an object with ref/unref (Deno 2, Node, Bun), never null or a bare object",
  'src/runtime/deadline_timer.ts|typeof (t as { unref?: unknown }).unref === "function" &&|&&|||':
    "every runtime's timer object has both unref and ref, or neither",
  "src/runtime/deadline_timer.ts|if (queue[parent].due <= entry.due) break;|<=|<":
    "an entry moved above a parent of equal due keeps a valid heap; equal dues fire in one run()",
  "src/runtime/deadline_timer.ts|const c = r < queue.length && queue[r].due < queue[l].due ? r : l;|<|<= #2":
    "children of equal due: either is a valid heap top (the bound's <= reads past the end: killed)",
  "src/runtime/deadline_timer.ts|if (queue[c].due >= last.due) break;|>=|>":
    "sifting the last entry below a child of equal due keeps a valid heap",
  "src/runtime/deadline_timer.ts|if (timer !== undefined) clearTimeout(timer);|timer !== undefined|true":
    "clearTimeout(undefined) does nothing",
  "src/runtime/deadline_timer.ts|idle = false;|false|true #3":
    "run() leaves timer undefined until arm()'s disarm() resets idle; idle is read only with a timer",
  "src/runtime/deadline_timer.ts|if (live === 0) queue.length = 0;|live === 0|false":
    "with no live deadline left, the arm() just after pops every cancelled entry: empty either way",
  "src/codec/radix.ts|this.#maxNumber = Number(this.max < 9007199254740991n ? this.max : 9007199254740991n);|this.max < 9007199254740991n|true":
    "only a safe integer is compared with it, and Number(max) of a max above 2^53 - 1 is at least that",
  "src/codec/radix.ts|this.#maxNumber = Number(this.max < 9007199254740991n ? this.max : 9007199254740991n);|<|<=":
    "a max equal to 2^53 - 1 gives the same number either way",
  "src/engine/durability_gate.ts|if (store !== undefined) forget(store);|store !== undefined|true":
    "forget(undefined) does nothing: hasCachedReads(undefined) is false",
  "src/engine/durability_gate.ts|this.#accepted = true;|true|false":
    "#accepted is read only by beforeReserve, which then awaits a check() that resolved already",
  "src/stores/redis/confirm.ts|if (before !== undefined && after !== undefined) {|before !== undefined && after !== undefined|true #1":
    "WAITAOF: after is set exactly when before is; sameConnection(undefined, undefined) finds them equal",
  "src/stores/redis/confirm.ts|if (before !== undefined && after !== undefined) {|before !== undefined && after !== undefined|true #2":
    "WAIT: after is set exactly when before is; sameConnection(undefined, undefined) finds them equal",
  "src/stores/redis/confirm.ts|if (before !== undefined && after !== undefined) {|&&||| #1":
    "WAITAOF: after is set exactly when before is, so either operand alone decides",
  "src/stores/redis/confirm.ts|if (before !== undefined && after !== undefined) {|&&||| #2":
    "WAIT: after is set exactly when before is, so either operand alone decides",
  "src/stores/redis/confirm.ts|if (cause instanceof KvIdError) throw cause;|cause instanceof KvIdError|false":
    "the only KvIdError thrown there matches neither pattern below, and toKvIdError returns it as it is",
  "src/codec/radix.ts|for (let i = 0; i < alphabet.length; i++) this.#digit[alphabet.charCodeAt(i)] = i;|<|<=":
    "charCodeAt past the end is NaN, and a typed array ignores a write at index NaN",
  // radix.ts's encode: a fast path for a safe integer within the domain; the BigInt path it
  // skips gives the same text (and throws outside the domain).
  'src/codec/radix.ts|if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && id <= this.#maxNumber) {|typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && id <= this.#maxNumber|false':
    "every ID takes the BigInt path, which writes the same digits",
  'src/codec/radix.ts|if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && id <= this.#maxNumber) {|===|!==':
    "Number.isSafeInteger of a non-number is false: every ID takes the BigInt path, same digits",
  'src/codec/radix.ts|if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && id <= this.#maxNumber) {|>=|>':
    "0 takes the BigInt path, which writes the same digit",
  'src/codec/radix.ts|if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && id <= this.#maxNumber) {|<=|<':
    "the largest ID takes the BigInt path, which writes the same digits",
  "src/codec/radix.ts|text = this.#decimal ? String(id) : this.#numberDigits(id);|this.#decimal|false":
    "the digits of the decimal alphabet are what String() writes",
  "src/codec/radix.ts|text = this.#decimal ? String(big) : this.#bigDigits(big);|this.#decimal|false":
    "the digits of the decimal alphabet are what String() writes",
  "src/codec/radix.ts|return this.width === undefined ? text : text.padStart(this.width, this.alphabet[0]);|this.width === undefined|false":
    "padStart to an undefined width pads nothing",
  "src/client/http_store.ts|body: body === undefined ? undefined : JSON.stringify(body),|body === undefined|false":
    "JSON.stringify(undefined) is undefined",
  'src/stores/redis/confirm.ts|if (b === "unknown" && a === "unknown") return; // a client that cannot say: as before|b === "unknown" && a === "unknown"|false':
    'both "unknown" are equal: the a !== b check below lets them through as well',
  // The codec's fast paths (issue 36c): the exact path they skip gives the same result.
  "src/codec/radix.ts|if (id <= 9007199254740991n) return this.#numberDigits(Number(id));|id <= 9007199254740991n|false":
    "the BigInt loop writes the same digits for a safe integer",
  "src/codec/radix.ts|if (id <= 9007199254740991n) return this.#numberDigits(Number(id));|<=|<":
    "2^53 - 1 through the BigInt loop gives the same digits",
  "src/codec/radix.ts|let wide = false;|false|true":
    "starting wide, the BigInt sum from 0n reads the same value",
  "src/codec/radix.ts|if (!wide && n * r + d <= 9007199254740991) {|!wide && n * r + d <= 9007199254740991|false":
    "every digit summed as a bigint from 0n: the same value",
  "src/codec/radix.ts|if (!wide && n * r + d <= 9007199254740991) {|<=|<":
    "a value of exactly 2^53 - 1 summed as a bigint is the same value",
  "src/codec/radix.ts|if (!wide && n * r + d <= 9007199254740991) {|<=|>":
    "the first digit (< 128) goes wide at once: every digit summed as a bigint, the same value",
  "src/codec/ff1.ts|for (let k = 0; k < 16; k++) y[k] ^= pq[off + k];|<|<=":
    "y has 16 bytes: a typed array ignores the write at index 16",
  "src/codec/ff1.ts|for (let k = 0; k < 16; k++) tail[k] ^= y[k];|<|<=":
    "tail has 16 bytes: a typed array ignores the write at index 16",
  "src/codec/ff1.ts|if (mod <= SAFE / 2) {|mod <= SAFE / 2|false":
    "the bigint path gives the same (x + y) mod radix^m for every modulus",
  "src/codec/ff1.ts|if (mod <= SAFE / 2) {|<=|<":
    "a modulus of exactly 2^52 takes the bigint path: the same sum",
  "src/codec/ff1.ts|if (mod <= SAFE / 2) {|{\n      const s = x + y;\n      return s >= mod ? s - mod : s < 0 ? s + mod : s;\n    }|{}":
    "without the number path every sum takes the bigint one: the same value",
  "src/codec/ff1.ts|for (let k = 15; k > 15 - b; k--) {|>|>=":
    "half < radix^v <= 256^b, so the extra byte is 0 and xors nothing",
  "src/codec/ff1.ts|if (mod <= HORNER_MAX) {|mod <= HORNER_MAX|false":
    "the bigint reduction gives the same NUM(S) mod radix^m for every modulus",
  "src/codec/ff1.ts|if (mod <= HORNER_MAX) {|{\n      let y = 0;\n      for (let k = 0; k < d; k++) y = (y * 256 + ((words[k >> 2] >>> ((k & 3) * 8)) & 255)) % mod;\n      return y;\n    }|{}":
    "without the number reduction every NUM(S) takes the bigint one: the same value",
  "src/codec/ff1.ts|if (mod <= HORNER_MAX) {|<=|<":
    "a modulus of exactly 2^45 takes the bigint reduction: the same value",
  // reservation.ts: mutants no test can tell from the code.
  "src/engine/reservation.ts|this.#floor = s.floor === undefined ? UserFloor.NONE : new UserFloor(s.floor, s.key, name);|s.floor === undefined|false":
    "a UserFloor without a read is NONE's twin: never due, value 0n, read() a no-op; NONE saves an object",
  "src/engine/reservation.ts|if (work.length === 0) return;|work.length === 0|false":
    "with nothing to do, Promise.all([]) wins the race at once and the timer is cleared: the same end",
  "src/engine/reservation.ts|if (store === undefined) return { durability, loadStep: false };|false|true":
    "with no store the attempt fails making one before loadStep is read; the next reservation looks up again",
  "src/engine/reservation.ts|const mark = this.#floor.value > floor ? this.#floor.value : floor;|>|>=":
    "a floor option equal to the generator's mark: either operand is the same bigint",
  "src/engine/reservation.ts|raiseTo: mark + s.margin > MAX_ID ? MAX_ID : mark + s.margin,|>|>=":
    "mark + margin exactly 2^63-1: MAX_ID either way",
  "src/engine/reservation.ts|const below = floor > 0n && reply.ranges.length > 0 && reply.ranges[0].first <= floor;|>|>= #1":
    "at mark 0 a first ID <= 0 was refused as hostile just before, so nothing at or below 0 gets here",
  "src/engine/reservation.ts|if (userFloor > 0n && lowest !== undefined && lowest <= userFloor) {|>|>=":
    "with no floor option (0) a first ID <= 0 was refused as hostile just before",
  // segment_buffer.ts and segment.ts: mutants no test can tell from the code.
  "src/engine/segment_buffer.ts|this.skipped += (last < this.high ? last : this.high) - first + 1n;|<|<=":
    "a range ending exactly at the mark: last and high are the same bigint",
  "src/engine/segment_buffer.ts|if (this.ahead.length > 0 && this.prefetchFrom < this.size) this.prefetchFrom = this.size;|<|<=":
    "a mark already at the segment's end is set to that same end",
  "src/engine/segment.ts|this.prefetchFrom = leftAtMark >= 0 ? Math.max(0, size - 1 - leftAtMark) : size;|leftAtMark >= 0|true":
    "-1, the only 'no mark' passed, makes the formula max(0, size - 1 + 1) = size",
  // interleaved_store.ts: mutants no test can tell from the code.
  "src/stores/interleaved/interleaved_store.ts|if (floor <= 0n) return 0n;|floor <= 0n|false":
    "floor 0 gives cycle (n - 1 - i) / n = 0 through the formula; a negative one's cycle is lost in max() with the mark >= 0",
  "src/stores/interleaved/interleaved_store.ts|if (floor <= 0n) return 0n;|<=|<":
    "floor 0 gives cycle (n - 1 - i) / n = 0 through the formula too",
  "src/stores/interleaved/interleaved_store.ts|return a > b ? a : b;|>|>=":
    "max of two equal bigints is either",
  // step_memory.ts: mutants no test can tell from the code.
  "src/engine/step_memory.ts|if (!hasStepMemory(store)) return undefined;|!hasStepMemory(store)|false":
    "a store without loadStep throws a TypeError inside the try, whose catch returns undefined too",
  "src/engine/step_memory.ts|} catch {|{\n      return undefined; // no remembered step: start at minStep\n    }|{}":
    "an empty catch ends the async function with undefined, what the return says",
  // wait_queue.ts: when the queue's array is compacted only changes its memory, never which
  // call is served or rejected (the head index and the array are moved together).
  "src/engine/wait_queue.ts|while (this.#head < waiters.length && waiters[this.#head].deadline <= now) {|<=|<":
    "a deadline exactly equal to performance.now() at the timer cannot be staged",
  "src/engine/wait_queue.ts|} else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {|this.#head > 1024 && this.#head * 2 > this.#waiters.length|true":
    "compacting after every serve: the same calls in the same order, more copying",
  "src/engine/wait_queue.ts|} else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {|this.#head > 1024 && this.#head * 2 > this.#waiters.length|false":
    "never compacting a queue that does not empty: the same calls in the same order, more memory",
  "src/engine/wait_queue.ts|} else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {|&&|||":
    "compacting more often: the same calls in the same order",
  "src/engine/wait_queue.ts|} else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {|>|>= #1":
    "compacting at 1,024 served instead of 1,025: the same calls in the same order",
  "src/engine/wait_queue.ts|} else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {|>|<= #1":
    "compacting a short queue instead of a long one: the same calls in the same order",
  "src/engine/wait_queue.ts|} else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {|>|>= #2":
    "compacting at exactly half served: the same calls in the same order",
  "src/engine/wait_queue.ts|} else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {|>|<= #2":
    "compacting while most calls still wait: the same calls in the same order",
  "src/engine/wait_queue.ts|} else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {|*|/":
    "compacting whenever over 1,024 are served: the same calls in the same order",
  "src/engine/wait_queue.ts|} else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {|{\n      this.#waiters = this.#waiters.slice(this.#head);\n      this.#head = 0;\n    }|{}":
    "never compacting a queue that does not empty: the same calls in the same order, more memory",
  // deno_kv_store.ts: mutants no test can tell from the code.
  "src/stores/deno_kv/deno_kv_store.ts|if (pause >= 1) await new Promise((resolve) => setTimeout(resolve, pause));|pause >= 1|true":
    "a pause under 1 ms is a timer of 0 or 1 ms: the same retry",
  "src/stores/deno_kv/deno_kv_store.ts|if (pause >= 1) await new Promise((resolve) => setTimeout(resolve, pause));|>=|>":
    "a random pause of exactly 1 ms cannot be staged; either is a 1 ms timer",
  // The retry pause: only its length changes, and a test may not assert on wall-clock time.
  "src/stores/deno_kv/deno_kv_store.ts|const ceiling = Math.min(this.#maxBackoff, 2 ** Math.min(attempt, 16) / 2);|/|*":
    "a longer pause ceiling before the same retry (maxBackoff still caps it)",
  "src/stores/deno_kv/deno_kv_store.ts|const pause = Math.random() * ceiling;|*|/":
    "another random pause before the same retry",
  "src/stores/deno_kv/deno_kv_store.ts|if (pause >= 1) await new Promise((resolve) => setTimeout(resolve, pause));|pause >= 1|false":
    "no pause: the same retry at once",
  "src/stores/deno_kv/deno_kv_store.ts|if (pause >= 1) await new Promise((resolve) => setTimeout(resolve, pause));|>=|<":
    "a sub-millisecond pause kept, a longer one skipped: the same retry, sooner",
  "src/stores/deno_kv/deno_kv_store.ts|for (let i = 0; i < names.length; i += 5) {|<|<=":
    "one more batch, empty: getMany([]) reads nothing",
  "src/stores/deno_kv/deno_kv_store.ts|if (this.#closed) return;|this.#closed|false":
    "a second close() disowns and closes nothing more: the database was let go by the first",
  "src/stores/deno_kv/deno_kv_store.ts|if (this.#owned) opened.close();|this.#owned|true":
    "a borrowed Deno.Kv is taken without an await, so close() cannot come between: never reached",
  "src/stores/deno_kv/deno_kv_store.ts|if (this.#kv === kv) this.#kv = undefined;|this.#kv === kv|true":
    "this catch is the open's first reaction, before any caller's: #kv is still that open",
  "src/stores/interleaved/interleaved_store.ts|durable: true,|true|false":
    "mergeDurability() and the judge read a member's problems (none for a trusted one), not its flag",
  "src/stores/redis/replies.ts|const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;|>|>=":
    "a raiseTo of exactly 2^63-1 is MAX_ID either way",
  "src/stores/redis/redis_store.ts|const raiseTo = options.raiseTo > MAX_ID ? MAX_ID : options.raiseTo;|>|>=":
    "a layout raiseTo of exactly 2^63-1 is MAX_ID either way",
  "src/stores/redis/redis_store.ts|if (this.#client !== undefined) forgetServerReads(this.#client);|this.#client !== undefined|true":
    "forgetServerReads(undefined) deletes nothing from a WeakMap and throws nothing",
};

/** A test file run for one mutant is killed after this long. */
export const MUTANT_LIMIT_MS = 120_000;

/** One generated mutant: replace `text[start, end)` with `to`. */
export interface Mutant {
  start: number;
  end: number;
  to: string;
  /** 1-based line of `start`. */
  line: number;
  /** What it does, e.g. `< -> <=`. */
  what: string;
  /** The key looked up in {@linkcode EQUIVALENT}. */
  key: string;
}

const SWAPS: Partial<Record<ts.SyntaxKind, string[]>> = {
  [ts.SyntaxKind.LessThanToken]: ["<=", ">="],
  [ts.SyntaxKind.LessThanEqualsToken]: ["<", ">"],
  [ts.SyntaxKind.GreaterThanToken]: [">=", "<="],
  [ts.SyntaxKind.GreaterThanEqualsToken]: [">", "<"],
  [ts.SyntaxKind.EqualsEqualsEqualsToken]: ["!=="],
  [ts.SyntaxKind.ExclamationEqualsEqualsToken]: ["==="],
  [ts.SyntaxKind.EqualsEqualsToken]: ["!="],
  [ts.SyntaxKind.ExclamationEqualsToken]: ["=="],
  [ts.SyntaxKind.AmpersandAmpersandToken]: ["||"],
  [ts.SyntaxKind.BarBarToken]: ["&&"],
  [ts.SyntaxKind.QuestionQuestionToken]: ["&&"],
  [ts.SyntaxKind.PlusToken]: ["-"],
  [ts.SyntaxKind.MinusToken]: ["+"],
  [ts.SyntaxKind.AsteriskToken]: ["/"],
  [ts.SyntaxKind.SlashToken]: ["*"],
  [ts.SyntaxKind.PercentToken]: ["*"],
  [ts.SyntaxKind.PlusEqualsToken]: ["-="],
  [ts.SyntaxKind.MinusEqualsToken]: ["+="],
  [ts.SyntaxKind.AmpersandAmpersandEqualsToken]: ["||="],
  [ts.SyntaxKind.BarBarEqualsToken]: ["&&="],
  [ts.SyntaxKind.QuestionQuestionEqualsToken]: ["&&="],
};

/** Every mutant of `text` (the source of `file`). */
export function mutantsOf(file: string, text: string): Mutant[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: Mutant[] = [];
  const add = (start: number, end: number, to: string, what: string) => {
    const line = source.getLineAndCharacterOfPosition(start).line + 1;
    const lineText = text.split("\n")[line - 1].trim();
    const from = text.slice(start, end);
    out.push({ start, end, to, line, what, key: `${file}|${lineText}|${from}|${to}` });
  };
  const condition = (e: ts.Expression | undefined) => {
    if (e === undefined) return;
    if (e.kind === ts.SyntaxKind.TrueKeyword || e.kind === ts.SyntaxKind.FalseKeyword) return;
    add(e.getStart(source), e.getEnd(), "true", "condition -> true");
    add(e.getStart(source), e.getEnd(), "false", "condition -> false");
  };
  const visit = (node: ts.Node): void => {
    // Types, imports and declarations only: nothing runs there.
    if (
      ts.isTypeNode(node) || ts.isImportDeclaration(node) || ts.isExportDeclaration(node) ||
      ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)
    ) return;
    if (ts.isBinaryExpression(node)) {
      const swaps = SWAPS[node.operatorToken.kind];
      for (const to of swaps ?? []) {
        const op = node.operatorToken;
        add(op.getStart(source), op.getEnd(), to, `${op.getText(source)} -> ${to}`);
      }
    }
    if (ts.isPrefixUnaryExpression(node)) {
      if (node.operator === ts.SyntaxKind.ExclamationToken) {
        add(node.getStart(source), node.operand.getStart(source), "", "!x -> x");
      } else if (
        node.operator === ts.SyntaxKind.MinusToken && !ts.isLiteralExpression(node.operand)
      ) {
        add(node.getStart(source), node.operand.getStart(source), "", "-x -> x");
      } else if (node.operator === ts.SyntaxKind.PlusPlusToken) {
        add(node.getStart(source), node.operand.getStart(source), "--", "++ -> --");
      } else if (node.operator === ts.SyntaxKind.MinusMinusToken) {
        add(node.getStart(source), node.operand.getStart(source), "++", "-- -> ++");
      }
    }
    if (ts.isPostfixUnaryExpression(node)) {
      const to = node.operator === ts.SyntaxKind.PlusPlusToken ? "--" : "++";
      add(node.operand.getEnd(), node.getEnd(), to, `x${to === "--" ? "++" : "--"} -> x${to}`);
    }
    if (node.kind === ts.SyntaxKind.TrueKeyword) {
      add(node.getStart(source), node.getEnd(), "false", "true -> false");
    }
    if (node.kind === ts.SyntaxKind.FalseKeyword) {
      add(node.getStart(source), node.getEnd(), "true", "false -> true");
    }
    if (ts.isIfStatement(node) || ts.isWhileStatement(node) || ts.isDoStatement(node)) {
      condition(node.expression);
    }
    if (ts.isForStatement(node)) condition(node.condition);
    if (ts.isConditionalExpression(node)) condition(node.condition);
    if (ts.isBlock(node) && node.statements.length > 0) {
      add(node.getStart(source), node.getEnd(), "{}", "block -> {}");
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  // Two mutants with the same swap on one line text (two `>` to `>=` on a line, or one line
  // written twice in the file) would share a key, and one EQUIVALENT entry would excuse both:
  // each of them gets its place among them in the file, ` #1`, ` #2`, ...
  const groups = new Map<string, Mutant[]>();
  for (const m of out) groups.set(m.key, [...(groups.get(m.key) ?? []), m]);
  for (const group of groups.values()) {
    if (group.length === 1) continue;
    group.sort((a, b) => a.start - b.start).forEach((m, i) => m.key = `${m.key} #${i + 1}`);
  }
  return out;
}

const root = new URL("..", import.meta.url).pathname;

/** Copy the repository's tracked and untracked (not ignored) files to a fresh temp dir. */
async function copyRepo(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "kvid-mutate-all-" });
  const list = await new Deno.Command("git", {
    args: ["ls-files", "-z", "-co", "--exclude-standard"],
    cwd: root,
    stdout: "piped",
  }).output();
  for (const file of new TextDecoder().decode(list.stdout).split("\0").filter((f) => f !== "")) {
    const to = `${dir}/${file}`;
    try {
      await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
      await Deno.copyFile(`${root}${file}`, to);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return dir;
}

/** Run `tests` in `dir` one at a time until one fails: what failed, or undefined. */
async function killedBy(dir: string, tests: readonly string[]): Promise<string | undefined> {
  for (const file of tests) {
    // A test file this checkout does not have (an older one, scored for "before"): skipped.
    if (!(await Deno.stat(`${dir}/${file}`).then(() => true, () => false))) continue;
    // setsid: the run and the servers its tests start form one process group, killed together.
    const child = new Deno.Command("setsid", {
      args: [
        "nice",
        "-n",
        "10",
        "deno",
        "test",
        "--config=deno.dev.json",
        "-A",
        "--no-check",
        "--fail-fast",
        "--sanitize-ops",
        "--sanitize-resources",
        file,
      ],
      cwd: dir,
      env: { KVID_TEST_LIMIT_MS: String(MUTANT_LIMIT_MS / 2), NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      try {
        Deno.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, MUTANT_LIMIT_MS);
    const out = await child.output();
    clearTimeout(timer);
    if (hung) return `${file} (hang)`;
    if (out.code !== 0) {
      const text = new TextDecoder().decode(out.stdout);
      const limit = /did not finish within/.test(text) ? " (test time limit)" : "";
      return `${file}${limit}`;
    }
  }
  return undefined;
}

/** `"3,17,40-45"` as a test of a number; undefined for no option. */
export function numberSet(spec: string | undefined): ((n: number) => boolean) | undefined {
  if (spec === undefined) return undefined;
  const ranges = spec.split(",").filter((p) => p !== "").map((part) => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (m === null) throw new Error(`not a number or range: ${part}`);
    return [Number(m[1]), Number(m[2] ?? m[1])] as const;
  });
  return (n) => ranges.some(([a, b]) => n >= a && n <= b);
}

if (import.meta.main) {
  const args = Deno.args.filter((a) => !a.startsWith("--"));
  const list = Deno.args.includes("--list");
  const option = (name: string) =>
    Deno.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const ids = numberSet(option("ids"));
  const lines = numberSet(option("lines"));
  const testsOption = option("tests")?.split(",").filter((t) => t !== "");
  const targets = TARGETS.filter((t) => args.length === 0 || args.some((a) => t.file.includes(a)));
  const dir = list ? "" : await copyRepo();
  const totals = { mutants: 0, killed: 0, survived: 0, equivalent: 0 };
  try {
    for (const target of targets) {
      const path = `${dir || root}/${target.file}`;
      const original = await Deno.readTextFile(path);
      const all = mutantsOf(target.file, original);
      const numbered = all.map((m, i) => ({ ...m, id: i + 1 }));
      const mutants = numbered.filter((m) =>
        (ids === undefined || ids(m.id)) && (lines === undefined || lines(m.line))
      );
      const of = mutants.length === all.length ? "" : ` (of ${all.length})`;
      if (list) {
        for (const m of mutants) console.log(`#${m.id} ${target.file}:${m.line} ${m.what}`);
        console.log(`${target.file}: ${mutants.length} mutants${of}`);
        continue;
      }
      const tests = testsOption ?? target.tests;
      const base = await killedBy(dir, tests);
      if (base !== undefined) {
        console.log(`${target.file}: ${base} fails without any mutant: skipped`);
        continue;
      }
      let killed = 0, survived = 0, equivalent = 0;
      for (const m of mutants) {
        await Deno.writeTextFile(path, original.slice(0, m.start) + m.to + original.slice(m.end));
        let by: string | undefined;
        try {
          by = await killedBy(dir, tests);
        } finally {
          await Deno.writeTextFile(path, original);
        }
        const why = EQUIVALENT[m.key];
        if (by !== undefined) killed++;
        else if (why !== undefined) {
          equivalent++;
          console.log(`equivalent #${m.id} ${target.file}:${m.line} ${m.what}: ${why}`);
        } else {
          survived++;
          console.log(`SURVIVED  #${m.id} ${target.file}:${m.line} ${m.what}  [${m.key}]`);
        }
      }
      console.log(
        `${target.file}: ${mutants.length} mutants${of}, ${killed} killed, ${survived} survived, ${equivalent} equivalent`,
      );
      totals.mutants += mutants.length;
      totals.killed += killed;
      totals.survived += survived;
      totals.equivalent += equivalent;
    }
    if (!list) {
      console.log(
        `${totals.mutants} mutants, ${totals.killed} killed, ${totals.survived} survived, ${totals.equivalent} equivalent`,
      );
    }
  } finally {
    if (dir) await Deno.remove(dir, { recursive: true });
  }
}

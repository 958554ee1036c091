/**
 * The mutations `tests/mutate.ts` applies: one deliberate bug each, as an exact text replacement
 * (`from` must occur exactly once in `file`, else the mutation is reported stale), with the test
 * files that should catch it, fastest first.
 *
 * @module
 */

/** One deliberate bug. */
export interface Mutation {
  /** Area and behaviour, e.g. `engine/single-flight`. */
  id: string;
  /** The behaviour it breaks. */
  what: string;
  /** Repository-relative path of the file to mutate. */
  file: string;
  /** Text that must occur exactly once in `file`. */
  from: string;
  /** What it is replaced with. */
  to: string;
  /** Test files that should catch it, run in this order until one fails. */
  tests: readonly string[];
}

const EVIDENCE = "tests/evidence_test.ts";
const ENGINE = "tests/engine_test.ts";
const KVID = "tests/kvid_test.ts";
const DAILY = "tests/daily_test.ts";
const HTTP = "tests/server_http_test.ts";
const KV = "tests/deno_kv_store_test.ts";
const ROLLBACK = "tests/faults/rollback_test.ts";
const LATE = "tests/faults/late_rollback_test.ts";
const DOWN = "tests/faults/down_test.ts";
const OUTAGE = "tests/faults/outage_test.ts";
const STATES = "tests/faults/states_test.ts";
const SETUP = "tests/faults/setup_test.ts";
const INTERLEAVED = "tests/interleaved_test.ts";
const EXACT = "tests/exact_replies_test.ts";
const PROMISES = "tests/promises_test.ts";
const GUARANTEE = "tests/service_guarantee_test.ts";
const CODEC_TESTS = ["tests/codec_edges_test.ts", "tests/codec_test.ts", "tests/ff1_test.ts"];
const INTERLEAVED_ANY = [
  "tests/interleaved_members_test.ts",
  "tests/interleaved_any_test.ts",
  INTERLEAVED,
  "tests/stores/store_spec_test.ts",
  "tests/sql_spec_test.ts",
];

const UNIT_OUTAGE = "tests/outage_test.ts";

const kvid = "src/engine/kvid.ts";
const reservation = "src/engine/reservation.ts";
const outage = "src/engine/outage.ts";
const errors = "src/contract/errors.ts";
const PG = "tests/postgres_store_test.ts";
const MYSQL = "tests/mysql_store_test.ts";
const sqlStore = "src/stores/sql/sql_table_store.ts";
const sqlValues = "src/stores/sql/table_values.ts";
const pgStore = "src/stores/postgres/postgres_store.ts";
const mysqlStore = "src/stores/mysql/mysql_store.ts";

/** Every mutation of the run. */
export const MUTATIONS: readonly Mutation[] = [
  // The SQL stores: the shared flow (src/stores/sql/), then each dialect's SQL and errors.
  {
    id: "sql/floor-guard",
    what: "a counter below the caller's floor is raised first",
    file: sqlStore,
    from: "const floor = options.guard && options.floor > 0n ? options.floor : 0n;",
    to: "const floor = 0n;",
    tests: [PG],
  },
  {
    id: "sql/raised-reported",
    what: "a raise is reported (raised: true), so the generator sees the rollback",
    file: sqlStore,
    from: "return reservationOf(raised, count, floor > 0n, layout, key, field);",
    to: "return reservationOf(raised, count, false, layout, key, field);",
    tests: [PG],
  },
  {
    id: "sql/stated-never-overrides",
    what: "a stated setting stands in only for one the server would not tell",
    file: sqlStore,
    from: 'if (settings[name] === "unknown") settings[name] = value;',
    to: "settings[name] = value;",
    tests: [PG],
  },
  {
    id: "sql/negative-refused",
    what: "a negative counter (by hand) is refused as reply, never served",
    file: sqlValues,
    from: "if (value !== undefined && value < 0n) {",
    to: "if (value !== undefined && value < -1_000_000n) {",
    tests: [PG],
  },
  {
    id: "sql/column-types",
    what: "a table whose value column is not bigint is refused before any arithmetic",
    file: sqlValues,
    from: '(column === "value" || column === "step") && type.toLowerCase() !== integer',
    to: "false",
    tests: [MYSQL],
  },
  {
    id: "sql/hostile-step",
    what: "a remembered step that is not positive is ignored",
    file: sqlValues,
    from: "return step !== undefined && step > 0n &&",
    to: "return step !== undefined && step > -10n &&",
    tests: [PG],
  },
  {
    id: "postgres/release-compare-and-set",
    what: "release gives the tail back only while nobody reserved since",
    file: pgStore,
    from: "AND value = $4::bigint AND layout IS NULL RETURNING 1 AS released",
    to: "AND value >= $4::bigint AND layout IS NULL RETURNING 1 AS released",
    tests: [PG],
  },
  {
    id: "mysql/release-compare-and-set",
    what: "release gives the tail back only while nobody reserved since",
    file: mysqlStore,
    from: "AND value = CAST(? AS SIGNED) AND layout IS NULL",
    to: "AND value >= CAST(? AS SIGNED) AND layout IS NULL",
    tests: [MYSQL],
  },
  {
    id: "postgres/day-pattern",
    what: "day cleanup deletes yyyymmdd names only",
    file: pgStore,
    from: "name ~ '^[0-9]{8}$'",
    to: "name ~ '^[0-9]{7,9}$'",
    tests: [PG],
  },
  {
    id: "mysql/day-cleanup-spares-members",
    what: "day cleanup leaves an interleaved member's day-named counter alone",
    file: mysqlStore,
    from: "AND name < ? AND layout IS NULL",
    to: "AND name < ?",
    tests: [MYSQL],
  },
  {
    id: "mysql/clock",
    what: "now() is the database's clock",
    file: mysqlStore,
    from: 'epochMs(Number(rows[0]?.s) * 1000, "UNIX_TIMESTAMP()")',
    to: 'epochMs(Number(rows[0]?.s) * 1000 + 3_600_000, "UNIX_TIMESTAMP()")',
    tests: [MYSQL],
  },
  {
    id: "postgres/deadlock-transient",
    what: "a deadlock is unavailable (retried), not a reply error",
    file: "src/stores/postgres/postgres_errors.ts",
    from: '["40001", "40P01", "55P03"',
    to: '["40001", "55P03"',
    tests: [PG],
  },
  {
    id: "postgres/unreachable-transient",
    what: "a failure without a SQLSTATE (a refused connection) is connection, retried",
    file: "src/stores/postgres/postgres_errors.ts",
    from: '  if (state === undefined) {\n    return new KvIdError("connection"',
    to: '  if (state === undefined) {\n    return new KvIdError("reply"',
    tests: [PG],
  },
  {
    id: "mysql/deadlock-transient",
    what: "a deadlock is unavailable (retried), not a reply error",
    file: "src/stores/mysql/mysql_errors.ts",
    from: "new Set([1213, 1205,",
    to: "new Set([1205,",
    tests: [MYSQL],
  },
  // The engine (src/engine/).
  {
    id: "engine/prefetch-prompt",
    what: "the prefetch is sent from the next timer turn",
    file: kvid,
    from: "      this.#pump();\n    }, 0);",
    to: "      this.#pump();\n    }, 50);",
    tests: [EVIDENCE, PROMISES, ENGINE],
  },
  {
    id: "errors/conflict-transient",
    what: "a conflict is retried",
    file: errors,
    from: `code === "timeout" || code === "conflict" ||`,
    to: `code === "timeout" ||`,
    tests: [EVIDENCE, KV],
  },
  {
    id: "errors/unavailable-transient",
    what: "an unavailable server is retried",
    file: errors,
    from: `code === "conflict" ||\n    code === "unavailable";`,
    to: `code === "conflict";`,
    tests: [STATES],
  },
  {
    id: "errors/connection-transient",
    what: "a connection error is retried",
    file: errors,
    from: `return code === "connection" || code === "timeout"`,
    to: `return code === "timeout"`,
    tests: [DOWN, "tests/faults/restart_test.ts"],
  },
  {
    id: "engine/rollback-at-floor",
    what: "a range starting exactly at the mark is a rollback",
    file: reservation,
    from: "reply.ranges[0].first <= floor;",
    to: "reply.ranges[0].first < floor;",
    tests: [EVIDENCE, ROLLBACK],
  },
  {
    id: "failfast/refusal-from-memory",
    what: "a refusal fails the next calls from memory until the backoff ends",
    file: outage,
    from: "if (last !== undefined && !isTransient(last.code) && now < this.retryAt) {",
    to: "if (false) {",
    tests: [UNIT_OUTAGE, EVIDENCE, SETUP],
  },
  {
    id: "giveback/late-below-mark",
    what: "a late range below the mark is never given back",
    file: "src/engine/give_back.ts",
    from: "const above = late.ranges.filter((r) => r.first > high);",
    to: "const above = late.ranges;",
    tests: [EVIDENCE, LATE],
  },
  {
    id: "giveback/release",
    what: "close() gives the unused top back",
    file: reservation,
    from: "if (ranges.length > 0) work.push(store.giveBack(s.key, this.#name, ranges));",
    to: "void ranges;",
    tests: [PROMISES, KVID],
  },
  {
    id: "giveback/within-close-timeout",
    what: "close() is bounded by one timeout: the give-back gets what is left of it",
    file: kvid,
    from: "const left = deadline - performance.now();",
    to: "const left = this.#timeout;",
    tests: [ENGINE],
  },
  {
    id: "engine/prefetch-at-mark",
    what: "crossing the prefetch mark starts the next reservation",
    file: kvid,
    from: "if (b.used >= b.prefetchFrom) this.#prefetchSoon();",
    to: "",
    tests: [PROMISES, ENGINE],
  },
  {
    id: "engine/single-flight",
    what: "at most one reservation in flight",
    file: kvid,
    from: "if (this.#inflight !== undefined || this.#closed) return;",
    to: "if (this.#closed) return;",
    tests: [ENGINE, KVID],
  },
  {
    id: "engine/demand-sizes-reservation",
    what: "callers waiting size a reservation up to maxStep",
    file: reservation,
    from: "Math.min(Math.max(this.sizer.step, demand), s.maxStep)",
    to: "Math.min(this.sizer.step, s.maxStep)",
    tests: [ENGINE, KVID],
  },
  {
    id: "guard/passed-to-store",
    what: "the guard option reaches the store",
    file: reservation,
    from: "guard: s.guard,",
    to: "guard: false,",
    tests: [ROLLBACK, KVID],
  },
  {
    id: "engine/negative-counter",
    what: "a counter holding a negative value is refused",
    file: reservation,
    from: "if (lowest !== undefined && lowest < 1n) {",
    to: "if (false) {",
    tests: ["tests/faults/input_test.ts", ROLLBACK, KVID],
  },
  {
    id: "engine/deadline-code",
    what: "a call past its deadline rejects with timeout",
    file: kvid,
    from: "    return this.#timeoutError();\n",
    to: "    return this.#outage.downError(performance.now());\n",
    tests: [DOWN, OUTAGE, KVID],
  },
  {
    id: "engine/close-rejects-waiters",
    what: "close() rejects pending calls with closed",
    file: kvid,
    from: "      this.#queue.rejectAll(() => this.#closedError());",
    to: "",
    tests: [KVID, ENGINE],
  },
  {
    id: "engine/backoff",
    what: "retries back off after a failure",
    file: outage,
    from: "this.retryAt = now + backoff(this.failuresInRow, this.#timeout / 2, random);",
    to: "this.retryAt = 0;",
    tests: [UNIT_OUTAGE, DOWN, EVIDENCE],
  },
  {
    id: "engine/reservation-timeout",
    what: "a hung reservation is abandoned after timeout",
    file: reservation,
    from: "        s.timeout,\n        // No cause",
    to: "        s.timeout * 1000,\n        // No cause",
    tests: [OUTAGE, DOWN],
  },
  {
    id: "failfast/default-on",
    what: "failFast is on by default",
    file: "src/engine/defaults.ts",
    from: "  failFast: true,",
    to: "  failFast: false,",
    tests: [OUTAGE, DOWN],
  },
  {
    id: "failfast/mark-down",
    what: "a store known down fails calls at once",
    file: outage,
    from: "if (!this.#failFast || this.downSince !== undefined) return false;",
    to: "return false;",
    tests: [UNIT_OUTAGE, OUTAGE, DOWN],
  },
  {
    id: "failfast/while-probing",
    what: "calls fail at once while a probe retries",
    file: outage,
    from: "if (this.downSince !== undefined && probing) {",
    to: "if (false) {",
    tests: [UNIT_OUTAGE, OUTAGE, DOWN],
  },
  // The segment buffer.
  {
    id: "buffer/high-water-mark",
    what: "only ranges above the high-water mark are accepted",
    file: "src/engine/segment_buffer.ts",
    from: "      if (first <= this.high) {",
    to: "      if (first < this.high) {",
    tests: [ROLLBACK, EVIDENCE],
  },
  {
    id: "buffer/safe-only",
    what: "number mode cuts ranges at MAX_SAFE_INTEGER",
    file: "src/engine/segment_buffer.ts",
    from: "if (this.#safeOnly && last > BigInt(Number.MAX_SAFE_INTEGER)) {",
    to: "if (false) {",
    tests: [EXACT, KVID],
  },
  {
    id: "buffer/unused-tail-contiguous",
    what: "only the contiguous unused top is given back",
    file: "src/engine/segment_buffer.ts",
    from: "if (s.first + BigInt(s.size) - 1n !== end || s.used >= s.size) break;",
    to: "if (s.used >= s.size) break;",
    tests: [PROMISES, KVID, ENGINE],
  },
  {
    id: "buffer/prefetch-lead",
    what: "the prefetch starts early enough for a slow link",
    file: "src/engine/segment_buffer.ts",
    from: "Math.max(Math.floor(this.#prefetchAt * total), Math.ceil(leadIds))",
    to: "Math.floor(this.#prefetchAt * total)",
    tests: [PROMISES, "tests/faults/slow_link_test.ts", "tests/faults/slow_test.ts"],
  },
  // The step rule (src/engine/step.ts).
  {
    id: "step/equal-keeps",
    what: "the doubling rule keeps the step when equal",
    file: "src/engine/step.ts",
    from: "if (elapsed < this.#duration)",
    to: "if (elapsed <= this.#duration)",
    tests: [EVIDENCE, ENGINE],
  },
  {
    id: "step/max-cap",
    what: "the step never passes maxStep",
    file: "src/engine/step.ts",
    from: "this.step = Math.min(this.step * 2, this.#max);",
    to: "this.step = this.step * 2;",
    tests: [ENGINE, "tests/options_test.ts"],
  },
  {
    id: "step/min-floor",
    what: "the step never drops below minStep",
    file: "src/engine/step.ts",
    from: "this.step = Math.max(Math.floor(this.step / 2), this.#min);",
    to: "this.step = Math.floor(this.step / 2);",
    tests: [EVIDENCE, ENGINE],
  },
  {
    id: "step/rate-growth-cap",
    what: "the rate rule grows at most x16 per reservation",
    file: "src/engine/step.ts",
    from: "Math.min(this.#max, this.step * RATE_MAX_GROWTH)",
    to: "this.#max",
    tests: [ENGINE],
  },
  {
    id: "step/clock-back",
    what: "a clock going back leaves the step",
    file: "src/engine/step.ts",
    from: "if (lastAt !== undefined && now >= lastAt) {",
    to: "if (lastAt !== undefined) {",
    tests: [EVIDENCE, "tests/faults/clock_test.ts"],
  },
  // The Redis store and its scripts.
  {
    id: "guard/script-raises",
    what: "the script raises a counter below the floor",
    file: "src/stores/redis/scripts.ts",
    from: "if string.match(cur, '^%-?%d+$') and below(cur, floor) then",
    to: "if false then",
    tests: [ROLLBACK, KVID],
  },
  {
    id: "guard/raised-reported",
    what: "a raised counter is reported",
    file: "src/stores/redis/scripts.ts",
    from: "    raised = 1\n",
    to: "    raised = 0\n",
    tests: [ROLLBACK, KVID],
  },
  {
    id: "guard/below-by-length",
    what: "decimal strings compare by length first",
    file: "src/stores/redis/scripts.ts",
    from: "if #a ~= #b then return #a < #b end",
    to: "if #a ~= #b then return #a > #b end",
    tests: [ROLLBACK, KVID],
  },
  {
    id: "giveback/compare-and-set",
    what: "a give-back lowers the counter only if nobody reserved since",
    file: "src/stores/redis/scripts.ts",
    from: "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[3] then",
    to: "if true then",
    tests: [KVID, "tests/faults/restart_test.ts", "tests/faults/processes_test.ts"],
  },
  {
    id: "store/rounded-reply-unsafe",
    what: "number mode refuses a rounded reply",
    file: "src/stores/redis/redis_store.ts",
    from: '      if (!options.exact) {\n        throw new KvIdError(\n          "unsafe",',
    to: '      if (false) {\n        throw new KvIdError(\n          "unsafe",',
    tests: [EXACT],
  },
  {
    id: "store/interleaved-layout-refused",
    what: "a plain HINCRBY refuses a counter interleaved servers own",
    file: "src/stores/redis/redis_store.ts",
    from: "if (Number(String(reply)) === 1) {",
    to: "if (false) {",
    tests: [INTERLEAVED],
  },
  {
    id: "replicas/count",
    what: "a reservation short of its replicas is spent",
    file: "src/stores/redis/confirm.ts",
    from: "if (seen.value < BigInt(replicas)) {",
    to: "if (false) {",
    tests: ["tests/replicas_test.ts"],
  },
  {
    id: "engine/blocked-loop-not-outage",
    what: "a deadline timer that fired late (a blocked event loop) gives the reply time first",
    file: "src/contract/deadline_timer.ts",
    from: "if (!entry.extended && late > LOOP_LAG_MS) {",
    to: "if (false) {",
    tests: ["tests/faults/blocked_loop_test.ts"],
  },
  {
    id: "engine/idle-timer-unref",
    what: "the deadline timer kept between deadlines holds no process open",
    file: "src/contract/deadline_timer.ts",
    from: "        timer.unref();",
    to: "",
    tests: ["tests/deadline_timer_test.ts"],
  },
  {
    id: "engine/idle-timer-kept",
    what: "while a generator is open, deadlines in a row share one setTimeout",
    file: "src/contract/deadline_timer.ts",
    from: "if (holders > 0 && canUnref(timer)) {",
    to: "if (false) {",
    tests: ["tests/deadline_timer_test.ts"],
  },
  {
    id: "store/wait-aof",
    what: "a reservation is handed out only once the server's AOF has it (waitAof)",
    file: "src/stores/redis/confirm.ts",
    from: "if (options.waitAof === true) await waitForAof(client, key, field, ms);",
    to: "",
    tests: ["tests/faults/crash_aof_test.ts"],
  },
  {
    id: "first/eviction-untouched",
    what: "a client's first reservation leaves the counter of an allkeys-* server untouched",
    file: "src/stores/redis/scripts.ts",
    from: "if string.sub(policy, 1, 8) == 'allkeys-' then served = false end",
    to: "",
    tests: ["tests/redis_first_reservation_test.ts"],
  },
  {
    id: "first/no-aof-untouched",
    what: "a client's first reservation leaves the counter of a server without AOF untouched",
    file: "src/stores/redis/scripts.ts",
    from: "if aof ~= '1' and not on(3) and not (aof == nil and on(4)) then served = false end",
    to: "",
    tests: ["tests/redis_first_reservation_test.ts", "tests/durability_shared_test.ts"],
  },
  {
    id: "first/one-call",
    what: "a client's first ID is one round trip (the durability read in the reservation)",
    file: "src/engine/durability_gate.ts",
    from: "return store.readsDurability === true && store.durability !== undefined && this.#due &&",
    to: "return false &&",
    tests: ["tests/redis_first_reservation_test.ts"],
  },
  // Error classes (src/contract/store_errors.ts).
  {
    id: "errors/loading-transient",
    what: "LOADING is a transient state",
    file: "src/contract/store_errors.ts",
    from: "(LOADING|READONLY|",
    to: "(READONLY|",
    tests: [STATES],
  },
  {
    id: "errors/noreplicas-transient",
    what: "NOREPLICAS, OOM and MISCONF are transient states",
    file: "src/contract/store_errors.ts",
    from: "CLUSTERDOWN|NOREPLICAS|OOM|MISCONF)",
    to: "CLUSTERDOWN)",
    tests: [STATES],
  },
  {
    id: "errors/overflow",
    what: "an overflow is said as overflow",
    file: "src/contract/store_errors.ts",
    from: "if (/overflow/i.test(message)) {",
    to: "if (false) {",
    tests: [KVID, "tests/faults/input_test.ts"],
  },
  {
    id: "errors/client-failure-is-connection",
    what: "a client failure is a connection error",
    file: "src/contract/store_errors.ts",
    from: "if (!isReplyError(err)) {",
    to: "if (false) {",
    tests: [DOWN, STATES],
  },
  {
    id: "errors/auth-is-config",
    what: "a failed authentication is config",
    file: "src/contract/store_errors.ts",
    from: "if (/(^|: )(NOAUTH|WRONGPASS)|invalid password|auth/i.test(message)) {",
    to: "if (false) {",
    tests: [KVID, SETUP],
  },
  // Deno KV.
  {
    id: "kv/guard",
    what: "Deno KV raises a counter below the floor",
    file: "src/stores/deno_kv/deno_kv_store.ts",
    from: "if (options.guard && current < options.floor) {",
    to: "if (false) {",
    tests: [KV],
  },
  {
    id: "kv/check-and-set",
    what: "Deno KV commits only if nobody wrote since the read",
    file: "src/stores/deno_kv/deno_kv_store.ts",
    from: "const op = kv.atomic().check(entry, layoutEntry).set(kvKey, new Deno.KvU64(last));",
    to: "const op = kv.atomic().check(layoutEntry).set(kvKey, new Deno.KvU64(last));",
    tests: [KV],
  },
  {
    id: "kv/max-attempts",
    what: "a contended reservation gives up after maxAttempts",
    file: "src/stores/deno_kv/deno_kv_store.ts",
    from: "if (attempt >= this.#maxAttempts) {",
    to: "if (false) {",
    tests: [KV],
  },
  // DailyId.
  {
    id: "daily/batch-recheck",
    what: "nextBatch re-reads the day after waiting",
    file: "src/daily/daily_generator.ts",
    from:
      "      if (gen !== this.#gen || this.#today.endedWhileWaiting(now, this.#clock)) {\n        continue;\n      }\n      if (count > 0",
    to: "      if (gen !== this.#gen) {\n        continue;\n      }\n      if (count > 0",
    tests: [EVIDENCE, DAILY],
  },
  {
    id: "daily/next-recheck",
    what: "next() re-reads the day after waiting",
    file: "src/daily/daily_generator.ts",
    from:
      "      if (gen !== this.#gen || this.#today.endedWhileWaiting(now, this.#clock)) {\n        continue;\n      }\n      if (seq > this.#maxSeq)",
    to: "      if (gen !== this.#gen) {\n        continue;\n      }\n      if (seq > this.#maxSeq)",
    tests: [DAILY],
  },
  {
    id: "daily/day-end",
    what: "the day ends at the next midnight (off by a day: the call spins)",
    file: "src/daily/day_switch.ts",
    from: "    this.end = this.#zone.endOf(day, now);",
    to: "    this.end = this.#zone.endOf(day, now) - 86_400_000;",
    tests: [DAILY],
  },
  {
    id: "daily/never-back",
    what: "a clock going back never dates IDs on an earlier day",
    file: "src/daily/day_switch.ts",
    from: "if (current !== undefined && day.ymd <= current.ymd) {",
    to: "if (false) {",
    tests: [DAILY, "tests/faults/clock_test.ts"],
  },
  {
    id: "daily/overflow",
    what: "seq past 10^digits - 1 is an overflow error",
    file: "src/daily/daily_generator.ts",
    from: "      if (seq > this.#maxSeq) {",
    to: "      if (false) {",
    tests: [DAILY],
  },
  {
    id: "daily/cleanup-earlier-clock",
    what: "cleanup dates by the earlier of the caller's and the server's clock",
    file: "src/daily/day_cleanup.ts",
    from: "keepFrom(serverDay.ymd < today.ymd ? serverDay : today, keepDays)",
    to: "keepFrom(today, keepDays)",
    tests: [DAILY],
  },
  {
    id: "daily/cleanup-keep-days",
    what: "cleanup keeps keepDays days before today",
    file: "src/daily/keep_days.ts",
    from: "return addDays(today, -keepDays);",
    to: "return addDays(today, -keepDays + 1);",
    tests: [DAILY],
  },
  // The service: auth and scope.
  {
    id: "service/scope",
    what: "a token asks IDs of its names only",
    file: "src/service/auth.ts",
    from: `return scope === "*" || scope.has(name);`,
    to: "return true;",
    tests: [HTTP],
  },
  {
    id: "service/token-length",
    what: "a token must match in length too",
    file: "src/service/auth.ts",
    from: "let diff = length ^ t.length;",
    to: "let diff = 0;",
    tests: [EVIDENCE, HTTP],
  },
  {
    id: "service/token-constant-time",
    what: "the token compare walks every token over its whole length",
    file: "src/service/auth.ts",
    from:
      "      let diff = length ^ t.length;\n      for (let i = 0; i < t.length; i++) diff |= t[i] ^ (charCodeAt(text, start + i) | 0);",
    to: "      const diff = text.slice(start) === String.fromCharCode(...t) ? 0 : 1;",
    tests: [EVIDENCE, HTTP],
  },
  {
    id: "service/session-expiry",
    what: "sessions expire after 12 h",
    file: "src/service/auth.ts",
    from: "if (!(Date.now() < session.expires)) {",
    to: "if (false) {",
    tests: [EVIDENCE, "tests/server_page_test.ts"],
  },
  {
    id: "service/forbidden",
    what: "a name outside the token's scope is 403",
    file: "src/service/ids_endpoint.ts",
    from:
      '    const name = decodeName(rest);\n    if (typeof name !== "string") return name;\n    if (!inScope(scope, name)) {',
    to:
      '    const name = decodeName(rest);\n    if (typeof name !== "string") return name;\n    if (false) {',
    tests: [HTTP],
  },
  {
    id: "service/unauthorized",
    what: "a request without a valid token is 401",
    file: "src/service/ids_endpoint.ts",
    from:
      "    const scope = scopeOf(req);\n    if (scope === undefined) return unauthorized();\n    // The engine",
    to: '    const scope = scopeOf(req) ?? "*";\n    // The engine',
    tests: [HTTP],
  },
  {
    id: "service/store-forwarding",
    what: "the service's timing wrapper keeps the store's give-back (issue 22's bug)",
    file: "src/service/generators.ts",
    from: "const value = Reflect.get(target, prop, target);",
    to: 'const value = prop === "giveBack" ? undefined : Reflect.get(target, prop, target);',
    tests: ["tests/service_stores_test.ts"],
  },
  // The service's own guarantee against its tokens (issue 33): receipts, raises, steps.
  {
    id: "service/release-receipt",
    what: "a release is refused unless its receipts are this token's and cover the range",
    file: "src/service/segments.ts",
    from: "if (why !== undefined) return refusedRelease(why);",
    to: "if (false) return refusedRelease(why!);",
    tests: [GUARANTEE],
  },
  {
    id: "service/release-receipt-used-up",
    what: "a receipt is used up by its release: a replay is refused",
    file: "src/service/receipts.ts",
    from:
      "    if (left.length === 0) this.#byName.delete(name);\n    else this.#byName.set(name, left);",
    to: "",
    tests: [GUARANTEE],
  },
  {
    id: "service/raise-admin",
    what: "a token that is not administrative raises a counter by one maximum segment at most",
    file: "src/service/segments.ts",
    from: "if (guard && !holder.admin) {",
    to: "if (false) {",
    tests: [GUARANTEE],
  },
  {
    id: "service/step-admin",
    what: "a token that is not administrative writes a step up to the segment cap only",
    file: "src/service/segments.ts",
    from: "if (!holder.admin && (step as number) > this.#maxSegment) {",
    to: "if (false) {",
    tests: [GUARANTEE],
  },
  {
    id: "service/admin-marker",
    what: "only admin= makes a token administrative, not *",
    file: "src/service/auth.ts",
    from: "const admin = names.startsWith(ADMIN_PREFIX);",
    to: 'const admin = names.startsWith(ADMIN_PREFIX) || names === "*";',
    tests: [GUARANTEE],
  },
  {
    id: "service/raise-not-lower",
    what: "raiseTo below floor (which would lower the counter) is refused",
    file: "src/service/segments.ts",
    from: 'if (guard && raiseTo < floor) return bad("raiseTo must be at least floor");',
    to: "",
    tests: [GUARANTEE],
  },
  // The codec (src/codec/) and the interleaving over any store (src/stores/interleaved/).
  {
    id: "codec/radix-shortest-form",
    what: "a radix form decodes only the shortest form (no leading zero digit)",
    file: "src/codec/radix.ts",
    from: "if (w === undefined && encoded.length > 1 && encoded[0] === this.alphabet[0]) {",
    to: "if (false) {",
    tests: CODEC_TESTS,
  },
  {
    id: "codec/radix-above-max",
    what: "a radix form refuses a text above the largest ID, never wraps",
    file: "src/codec/radix.ts",
    from: "if (id > this.max) throw malformed(",
    to: "if (false) throw malformed(",
    tests: CODEC_TESTS,
  },
  {
    id: "codec/radix-exact-past-2^53",
    what: "decoding past 2^53 is exact (bigint digits), never rounded",
    file: "src/codec/radix.ts",
    from: "if (!wide && n * r + d <= 9007199254740991) {",
    to: "if (!wide && n * r + d <= 2 ** 64) {",
    tests: CODEC_TESTS,
  },
  {
    id: "codec/domain-negative",
    what: "a negative ID is outside every codec's domain",
    file: "src/codec/codec.ts",
    from: "if (big < 0n || big > max) {",
    to: "if (big > max) {",
    tests: CODEC_TESTS,
  },
  {
    id: "codec/offset-below-first",
    what: "offset() refuses a text below its first ID",
    file: "src/codec/codec.ts",
    from: "if (id < 0n) throw malformed(`below the first ID",
    to: "if (id < -1n) throw malformed(`below the first ID",
    tests: CODEC_TESTS,
  },
  {
    id: "codec/prefix-checked",
    what: "prefix() decodes only a text that starts with it",
    file: "src/codec/affix.ts",
    from: "!encoded.startsWith(text)",
    to: "!encoded.includes(text)",
    tests: CODEC_TESTS,
  },
  {
    id: "codec/keyring-by-key-id",
    what: "an encrypted ID decodes with the key its first character names (rotation)",
    file: "src/codec/encrypted.ts",
    from: "const ff1 = this.#ff1.get(keyId);",
    to: "const ff1 = this.#ff1.get(keyId) && this.#encoder;",
    tests: CODEC_TESTS,
  },
  {
    id: "interleaved/member-rollback-mark",
    what: "a member below this store's own last reply is raised above it (data loss caught)",
    file: "src/stores/interleaved/interleaved_store.ts",
    from: "const floorCycle = max(this.#cycleAbove(options.floor, index), mark);",
    to: "const floorCycle = this.#cycleAbove(options.floor, index);",
    tests: INTERLEAVED_ANY,
  },
  {
    id: "interleaved/floor-cycle-rounds-up",
    what: "a member jumps to its first cycle above the floor, never one below",
    file: "src/stores/interleaved/interleaved_store.ts",
    from: "return d <= 0n ? 0n : (d + n - 1n) / n;",
    to: "return d <= 0n ? 0n : d / n;",
    tests: INTERLEAVED_ANY,
  },
  {
    id: "interleaved/layout-echo-checked",
    what: "a member store that does not record the layout is refused",
    file: "src/stores/interleaved/interleaved_store.ts",
    from: "if (reply.layout !== layout) {",
    to: "if (false) {",
    tests: INTERLEAVED_ANY,
  },
  {
    id: "interleaved/reply-range-checked",
    what: "a member's reply of the wrong number of cycles is a reply error",
    file: "src/stores/interleaved/interleaved_store.ts",
    from: "if (got.length !== 1 || got[0].last - got[0].first + 1n !== k || got[0].first < 1n) {",
    to: "if (got.length !== 1) {",
    tests: INTERLEAVED_ANY,
  },
  {
    id: "interleaved/refusal-not-failover",
    what: "a member's refusal (config) is the store's answer, not a reason to try the next",
    file: "src/stores/interleaved/interleaved_store.ts",
    from: "if (isRefusal(error)) {",
    to: "if (false) {",
    tests: INTERLEAVED_ANY,
  },
  {
    id: "interleaved/layout-names-block",
    what: "the recorded layout names the block: a changed block is refused",
    file: "src/stores/interleaved/layout.ts",
    from: "v1 servers=${members} block=${block} index=${index}",
    to: "v1 servers=${members} index=${index}",
    tests: INTERLEAVED_ANY,
  },
  {
    id: "interleaved/single-store-counter-refused",
    what: "a member holding a single-store counter is refused, not interleaved over",
    file: "src/stores/interleaved/layout.ts",
    from: "if (found === undefined && value !== 0n) throw singleStoreCounter(",
    to: "if (false) throw singleStoreCounter(",
    tests: INTERLEAVED_ANY,
  },
  {
    id: "interleaved/rotation",
    what: "after a success the next reservation starts at the next member",
    file: "src/stores/interleaved/interleaved_store.ts",
    from: "this.#next = (i + 1) % n;",
    to: "this.#next = i;",
    tests: INTERLEAVED_ANY,
  },
];

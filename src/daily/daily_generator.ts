/**
 * The `DailyId` generator: one `KvId` per day (its name the day, `yyyymmdd`), the day switch
 * ({@linkcode DaySwitch}) read on every call, the waiting callers of a day that ended, the
 * background cleanup when a day starts ({@linkcode DayCleaner}) and close. The interface and its
 * documentation are `daily.ts`; the options are checked in `daily_config.ts`.
 *
 * @module
 */

import { MAX_EPOCH_MS, MIN_EPOCH_MS } from "../contract/calendar_bounds.ts";
import type { Day, ZonedDays } from "./calendar.ts";
import type { Codec } from "../codec/codec.ts";
import { dailyForm, dayForm } from "../codec/daily.ts";
import { dailyConfig } from "./daily_config.ts";
import { DayCleaner } from "./day_cleanup.ts";
import { DaySwitch } from "./day_switch.ts";
import { MAX_KEEP_DAYS, MIN_KEEP_DAYS } from "./keep_days.ts";
import type {
  DailyCleanupDetail,
  DailyIdFormat,
  DailyIdOptions,
  DailyIdStats,
  DailyRollbackDetail,
  DailySerial,
} from "./daily_options.ts";
import { KvIdError } from "../contract/errors.ts";
import { KvId } from "../engine/kvid.ts";
import type { KvIdOptions, RollbackDetail } from "../engine/kvid_options.ts";
import { type Tracked, trackGenerator, untrackGenerator } from "../runtime/shutdown.ts";
import { checkInteger, describe } from "../contract/validate.ts";

const MAX_BATCH = 10_000_000;
/** Beyond `timeout`, how long the event loop may stall and a waiting call still be rechecked. */
const RECHECK_SLACK_MS = 60_000;

/**
 * The generator behind `DailyId`; see that interface (`daily.ts`, which checks this class
 * against it: an `implements` clause here would make the two files import each other).
 */
export class DailyIdImpl<T extends number | bigint | string> extends EventTarget {
  readonly name: string;
  readonly key: string;
  readonly digits: number;
  readonly timeZone: string;
  readonly format: DailyIdFormat;
  readonly codec: Codec<T>;
  readonly #digitsForm: Codec<string>;
  readonly #clock: () => number;
  readonly #zone: ZonedDays;
  readonly #inner: KvIdOptions & { bigint?: false };
  readonly #maxSeq: number;
  readonly #keepDays: number | undefined;
  readonly #today: DaySwitch;
  readonly #cleaner: DayCleaner;

  #gen: KvId<number> | undefined;
  /** Today's form: a codec of seq giving today's IDs (`dayForm`), set when a day starts. */
  #dayForm: Codec<T> | undefined;
  #full = false;
  #closed = false;
  #days = 0;
  readonly #pending = new Set<Promise<unknown>>();
  // Its entry in shutdown()'s registry.
  readonly #tracked: Tracked;

  // The listener types of the DailyId interface: "rollback" and "cleanup" get CustomEvents.
  override addEventListener(
    type: string,
    listener:
      | EventListenerOrEventListenerObject
      | ((event: CustomEvent<DailyRollbackDetail>) => void)
      | ((event: CustomEvent<DailyCleanupDetail>) => void)
      | null,
    options?: boolean | AddEventListenerOptions,
  ): void {
    super.addEventListener(type, listener as EventListenerOrEventListenerObject | null, options);
  }

  /**
   * @param name The generator's name; its hash is `kvid:daily:<name>` unless `key` is given.
   * @param options See {@linkcode DailyIdOptions}.
   * @throws {TypeError} A bad name or option (see `dailyConfig`).
   * @throws {RangeError} A number out of its range, an unknown time zone.
   */
  constructor(name: string, options: DailyIdOptions = {}) {
    super();
    const config = dailyConfig(name, options);
    this.name = name;
    this.key = config.key;
    this.digits = config.digits;
    this.timeZone = config.zone.timeZone;
    this.format = config.format;
    this.codec = dailyForm(config.format, config.digits) as Codec<T>;
    this.#digitsForm = dailyForm("string", config.digits);
    this.#clock = config.clock;
    this.#zone = config.zone;
    this.#inner = config.inner;
    this.#maxSeq = config.maxSeq;
    this.#keepDays = config.keepDays;
    this.#today = new DaySwitch(config.zone, config.timeout + RECHECK_SLACK_MS);
    this.#cleaner = new DayCleaner(config);
    this.#tracked = trackGenerator(this);
  }

  // The hot path: one clock read against the precomputed end of the day, then the engine's.
  async next(): Promise<T> {
    for (;;) {
      if (this.#closed) throw this.#closedError();
      const now = this.#clock();
      if (!(now < this.#today.end)) this.#roll(); // NaN too
      if (this.#full) throw this.#overflowError();
      const gen = this.#gen!;
      let seq: number;
      try {
        seq = await gen.next();
      } catch (err) {
        if (this.#superseded(gen, err)) continue;
        throw err;
      }
      // The day ended while the call waited: that seq is dated yesterday, drop it.
      if (gen !== this.#gen || this.#today.endedWhileWaiting(now, this.#clock)) {
        continue;
      }
      if (seq > this.#maxSeq) {
        this.#fill();
        throw this.#overflowError();
      }
      return this.#dayForm!.encode(seq);
    }
  }

  async nextBatch(count: number): Promise<T[]> {
    checkInteger("DailyId", "nextBatch(count)", count, 0, MAX_BATCH);
    for (;;) {
      if (this.#closed) throw this.#closedError();
      const now = this.#clock();
      if (!(now < this.#today.end)) this.#roll(); // NaN too
      if (this.#full) throw this.#overflowError();
      const gen = this.#gen!;
      let seqs: number[];
      try {
        seqs = await gen.nextBatch(count);
      } catch (err) {
        if (this.#superseded(gen, err)) continue;
        throw err;
      }
      if (gen !== this.#gen || this.#today.endedWhileWaiting(now, this.#clock)) {
        continue;
      }
      if (count > 0 && seqs[count - 1] > this.#maxSeq) {
        this.#fill();
        throw this.#overflowError();
      }
      // Rewrite in place: one array per batch.
      const out = seqs as unknown as T[];
      const form = this.#dayForm!;
      for (let i = 0; i < count; i++) out[i] = form.encode(seqs[i]);
      return out;
    }
  }

  parse(id: number | bigint | string): DailySerial {
    // Any of the three forms: its decimal digits are the string form's.
    const len = 8 + this.digits;
    let value: bigint;
    try {
      if (typeof id !== "string" && typeof id !== "number" && typeof id !== "bigint") throw id;
      value = this.#digitsForm.decode(typeof id === "string" ? id : String(id));
    } catch {
      throw new RangeError(`not a daily serial of ${len} digits: ${describe(id)}`);
    }
    const scale = 10n ** BigInt(this.digits);
    return { day: String(value / scale).padStart(8, "0"), seq: Number(value % scale) };
  }

  async cleanup(options: { keepDays: number }): Promise<number> {
    if (options === null || typeof options !== "object") {
      throw new TypeError("DailyId cleanup() takes { keepDays }");
    }
    checkInteger("DailyId", "keepDays", options.keepDays, MIN_KEEP_DAYS, MAX_KEEP_DAYS);
    const now = this.#readClock();
    return (await this.#cleaner.run(this.#zone.dayAt(now), options.keepDays)).deleted;
  }

  stats(): DailyIdStats {
    return {
      name: this.name,
      key: this.key,
      timeZone: this.timeZone,
      digits: this.digits,
      day: this.#today.day?.text,
      dayEndsAt: this.#today.day === undefined ? undefined : this.#today.end,
      full: this.#full,
      days: this.#days,
      counter: this.#gen?.stats(),
    };
  }

  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      untrackGenerator(this.#tracked);
      if (this.#gen !== undefined) this.#track(this.#gen.close());
    }
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Move to the clock's day (never back to an earlier one); start it if it is a new one. */
  #roll(): void {
    const started = this.#today.roll(this.#readClock());
    if (started !== undefined) this.#startDay(started);
  }

  #startDay(day: Day): void {
    // Yesterday's buffered IDs are dropped; its pending calls get "closed" and retry today.
    // Today starts at the step yesterday reached (at least minStep): no ramp-up after midnight.
    const step = this.#gen?.stats().step;
    if (this.#gen !== undefined) this.#track(this.#gen.close());
    const gen = new KvId(
      day.text,
      step === undefined ? this.#inner : {
        ...this.#inner,
        initialStep: step,
      },
    );
    gen.addEventListener("expiry", (e) => {
      this.dispatchEvent(new CustomEvent("expiry", { detail: (e as CustomEvent).detail }));
    });
    gen.addEventListener("rollback", (e) => {
      const detail = (e as CustomEvent<RollbackDetail>).detail;
      this.dispatchEvent(
        new CustomEvent<DailyRollbackDetail>("rollback", { detail: { ...detail, day: day.text } }),
      );
    });
    this.#gen = gen;
    this.#dayForm = dayForm(this.format, this.digits, day.text) as Codec<T>;
    this.#full = false;
    this.#days++;
    if (this.#keepDays !== undefined) {
      this.#track(
        this.#cleaner.inBackground(day, this.#keepDays, (detail) => {
          this.dispatchEvent(new CustomEvent<DailyCleanupDetail>("cleanup", { detail }));
        }),
      );
    }
  }

  /** Today's serials are used up: stop reserving until the day ends. */
  #fill(): void {
    if (this.#full) return;
    this.#full = true;
    this.#track(this.#gen!.close());
  }

  /** A call failed because its day's generator was closed by a rollover or overflow: retry. */
  #superseded(gen: KvId<number>, err: unknown): boolean {
    return !this.#closed && (gen !== this.#gen || this.#full) &&
      err instanceof KvIdError && err.code === "closed";
  }

  #track(p: Promise<unknown>): void {
    const tracked = p.catch(() => {}).finally(() => this.#pending.delete(tracked));
    this.#pending.add(tracked);
  }

  #readClock(): number {
    const now = this.#clock();
    if (typeof now !== "number" || !(now >= MIN_EPOCH_MS && now <= MAX_EPOCH_MS)) {
      throw new KvIdError(
        "config",
        `the clock returned ${describe(now)}, not epoch ms within years 1000 to 9999`,
        { key: this.key, field: this.#today.day?.text ?? this.name },
      );
    }
    return now;
  }

  #overflowError(): KvIdError {
    return new KvIdError(
      "overflow",
      `day ${
        this.#today.day!.text
      } used up its ${this.#maxSeq} serials (digits: ${this.digits}); ` +
        "IDs resume when the day ends",
      { key: this.key, field: this.#today.day!.text },
    );
  }

  #closedError(): KvIdError {
    return new KvIdError("closed", "the generator is closed", {
      key: this.key,
      field: this.#today.day?.text ?? this.name,
    });
  }
}

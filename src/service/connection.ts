/**
 * One TCP connection of the service's listener: its read buffer, and the deadline the listener's
 * sweep enforces on it (a deadline, not a timer, per connection).
 *
 * @module
 */

import type { ConnectionStats } from "./listener_options.ts";

/** Why a connection was closed by a limit. */
export type CloseReason = keyof ConnectionStats["closed"];

/** What a connection is doing: waiting between requests, reading a head, answering. */
export type Phase = "idle" | "head" | "busy";

/** A connection, its buffered input and its deadline. */
export class Connection {
  readonly conn: Deno.TcpConn;
  phase: Phase = "head";
  #buf = new Uint8Array(4096);
  #start = 0;
  #end = 0;
  /** When (performance.now() ms) the armed limit closes the connection; Infinity: none. */
  deadline = Infinity;
  #reason: CloseReason = "ioTimeout";
  closedBy: CloseReason | undefined;
  #closed = false;

  readonly #onClose: (c: Connection) => void;

  constructor(conn: Deno.TcpConn, onClose: (c: Connection) => void) {
    this.conn = conn;
    this.#onClose = onClose;
  }

  get buffered(): number {
    return this.#end - this.#start;
  }

  /**
   * Close the connection when `ms` pass before the next `arm`/`disarm`. A deadline, not a
   * timer: one sweep of all connections closes the late ones (a timer per request cost 3 timers
   * per request, which showed on a loaded machine; the deadline costs a clock read).
   */
  arm(ms: number, reason: CloseReason): void {
    this.deadline = performance.now() + ms;
    this.#reason = reason;
  }

  disarm(): void {
    this.deadline = Infinity;
  }

  /** Close it if its deadline passed. */
  expire(now: number): void {
    if (now >= this.deadline) this.close(this.#reason);
  }

  close(reason?: CloseReason): void {
    this.disarm();
    if (this.#closed) return;
    this.#closed = true;
    this.closedBy ??= reason;
    try {
      this.conn.close();
    } catch {
      // already closed
    }
    this.#onClose(this);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Read more bytes into the buffer; false at the end of the stream (or once closed). */
  async fill(): Promise<boolean> {
    if (this.#closed) return false;
    if (this.#start > 0 && this.#start === this.#end) this.#start = this.#end = 0;
    if (this.#end === this.#buf.length) {
      const size = this.buffered;
      const next = size * 2 > this.#buf.length ? new Uint8Array(this.#buf.length * 2) : this.#buf;
      next.copyWithin(0, this.#start, this.#end);
      if (next !== this.#buf) next.set(this.#buf.subarray(this.#start, this.#end));
      this.#buf = next;
      this.#start = 0;
      this.#end = size;
    }
    let n: number | null;
    try {
      n = await this.conn.read(this.#buf.subarray(this.#end));
    } catch {
      return false;
    }
    if (n === null) return false;
    this.#end += n;
    return true;
  }

  /** The index (relative to the buffered bytes) of the end of the head, or -1. */
  headEnd(): number {
    const b = this.#buf;
    for (let i = this.#start; i + 3 < this.#end; i++) {
      if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) {
        return i - this.#start;
      }
    }
    return -1;
  }

  /** Drop leading empty lines (allowed before a request line). */
  skipBlankLines(): void {
    while (
      this.#start < this.#end && (this.#buf[this.#start] === 13 || this.#buf[this.#start] === 10)
    ) this.#start++;
  }

  /** Take `n` buffered bytes. */
  take(n: number): Uint8Array {
    const out = this.#buf.slice(this.#start, this.#start + n);
    this.#start += n;
    return out;
  }

  /** The first `n` buffered bytes, not taken. */
  peek(n: number): Uint8Array {
    return this.#buf.subarray(this.#start, this.#start + Math.min(n, this.buffered));
  }

  /** Write all of `bytes` within `ms` in all (a client reading slowly is cut off then). */
  async write(bytes: Uint8Array, ms: number): Promise<void> {
    let at = 0;
    this.arm(ms, "ioTimeout");
    while (at < bytes.length) at += await this.conn.write(bytes.subarray(at));
    this.disarm();
  }

  /**
   * Arm the deadline of a body being read: `ms` from its first read, in all, however slowly
   * it trickles in (a body's bytes do not each buy more time).
   */
  armBody(ms: number): void {
    this.bodyDeadline ??= performance.now() + ms;
    this.deadline = this.bodyDeadline;
    this.#reason = "ioTimeout";
  }

  /** The deadline of the body being read, or undefined. */
  bodyDeadline: number | undefined;
}

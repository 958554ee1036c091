/**
 * Process and build metrics of the service in the Prometheus client conventions
 * (`process_*`, `*_build_info`), read where the runtime offers them and left out where not
 * (`/proc` exists on Linux only; Deno Deploy has neither `/proc` nor `process`).
 *
 * @module
 */

import meta from "../../deno.json" with { type: "json" };

/** The version of this package, from its deno.json. */
export const VERSION: string = meta.version;

const START_MS = Date.now();

function runtime(): { name: string; version: string } {
  const g = globalThis as {
    Deno?: { version?: { deno?: string } };
    Bun?: { version?: string };
    process?: { versions?: { node?: string } };
  };
  if (g.Deno?.version?.deno) return { name: "deno", version: g.Deno.version.deno };
  if (g.Bun?.version) return { name: "bun", version: g.Bun.version };
  return { name: "node", version: g.process?.versions?.node ?? "unknown" };
}

function gauge(out: string[], name: string, help: string, type: string, value: number): void {
  if (!Number.isFinite(value)) return;
  out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
}

// Only where reading /proc is already allowed: a query, so no permission prompt ever appears.
function mayRead(path: string): boolean {
  try {
    return Deno.permissions.querySync({ name: "read", path }).state === "granted";
  } catch {
    return false;
  }
}

function openFds(): number {
  if (!mayRead("/proc/self")) return NaN;
  try {
    let n = 0;
    for (const _ of Deno.readDirSync("/proc/self/fd")) n++;
    return n - 1; // the directory being read is one of them
  } catch {
    return NaN;
  }
}

function maxFds(): number {
  if (!mayRead("/proc/self")) return NaN;
  try {
    const line = Deno.readTextFileSync("/proc/self/limits").split("\n")
      .find((l) => l.startsWith("Max open files"));
    return Number(line?.split(/\s{2,}/)[1]);
  } catch {
    return NaN;
  }
}

/** The process and build series, one per line. */
export function processMetrics(): string[] {
  const out: string[] = [];
  const { name, version } = runtime();
  out.push(
    "# HELP kvid_build_info The running version of @kvid/core and its runtime.",
    "# TYPE kvid_build_info gauge",
    `kvid_build_info{version="${VERSION}",runtime="${name}",runtime_version="${version}"} 1`,
  );
  gauge(
    out,
    "process_start_time_seconds",
    "Start time of the process since the epoch, in seconds.",
    "gauge",
    START_MS / 1000,
  );
  const p = (globalThis as { process?: { cpuUsage?(): { user: number; system: number } } })
    .process;
  try {
    const cpu = p?.cpuUsage?.();
    if (cpu) {
      gauge(
        out,
        "process_cpu_seconds_total",
        "User and system CPU time spent, in seconds.",
        "counter",
        (cpu.user + cpu.system) / 1e6,
      );
    }
  } catch {
    // not offered here
  }
  try {
    const mem = Deno.memoryUsage();
    gauge(out, "process_resident_memory_bytes", "Resident memory, in bytes.", "gauge", mem.rss);
    gauge(out, "process_heap_bytes", "JavaScript heap in use, in bytes.", "gauge", mem.heapUsed);
  } catch {
    // not offered here
  }
  gauge(out, "process_open_fds", "Open file descriptors.", "gauge", openFds());
  gauge(out, "process_max_fds", "The limit of open file descriptors.", "gauge", maxFds());
  return out;
}

/**
 * Test harness: a real PostgreSQL 15 or MariaDB server, started on a free 127.0.0.1 port with its
 * data in a temp dir, killed (`kill -9` of its process group) and restarted on the same data, and
 * stopped with its dir removed. A server that fails to start throws (the test fails; nothing is
 * skipped).
 *
 * PostgreSQL refuses to run as root: as root the harness runs `initdb` and `postgres` as the user
 * `postgres` (`setpriv`, which execs, so the pid is the server's). MariaDB runs as root with
 * `--user=root`. Both are started under `setsid`, so a kill reaches every process of the server.
 *
 * @module
 */

const HOST = "127.0.0.1";
const PG_BIN = Deno.env.get("KVID_PG_BIN") ?? "/usr/lib/postgresql/15/bin";
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 20_000;

/** Options of {@linkcode startPostgres} and {@linkcode startMariaDb}. */
export interface SqlServerOptions {
  /** Server settings: PostgreSQL `-c name=value`, MariaDB `--name=value`. */
  settings?: Record<string, string>;
}

/** A started database server. */
export interface SqlServer extends AsyncDisposable {
  /** Which server. */
  readonly kind: "postgres" | "mariadb";
  /** Always 127.0.0.1. */
  readonly host: string;
  /** The TCP port. */
  readonly port: number;
  /** The superuser (PostgreSQL `kvid`, trust auth; MariaDB `root`, no password). */
  readonly user: string;
  /** The database the tests use: PostgreSQL `postgres`, MariaDB `kvid`. */
  readonly database: string;
  /** The password of `user` (PostgreSQL {@linkcode PG_PASSWORD}; MariaDB none). */
  readonly password: string;
  /** `postgres://...` or `mysql://...` for the superuser. */
  readonly url: string;
  /** `kill -9` the server (all its processes); `start()` brings it back on the same data. */
  kill(): Promise<void>;
  /** Start it again after `kill()` or `stop({ keepData: true })`. */
  start(): Promise<void>;
  /** Stop it (fast shutdown, then kill) and remove its dir unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<void>;
  /** The last lines the server printed (for failure messages). */
  log(): string;
  /** SIGKILL it and remove its dir, synchronously: for an `unload` handler, which cannot await. */
  killNow(): void;
}

/** Start a PostgreSQL 15 server with a database `kvid` owned by the superuser `kvid`. */
export async function startPostgres(options: SqlServerOptions = {}): Promise<SqlServer> {
  const dir = await Deno.makeTempDir({ prefix: "kvid-pg-" });
  try {
    const asPg = await asPostgresUser(dir);
    await Deno.writeTextFile(`${dir}/pwfile`, `${PG_PASSWORD}\n`);
    await Deno.chown(`${dir}/pwfile`, ...(await postgresIds()));
    await run([...asPg, `${PG_BIN}/initdb`, ...INITDB_ARGS(dir)], "initdb");
    return await startOnFreePort("postgres", dir, options);
  } catch (err) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw err;
  }
}

/** A PostgreSQL hot standby of a primary, streaming its WAL; {@linkcode promote} makes it one. */
export interface PostgresStandby extends SqlServer {
  /** Promote it to a primary (`pg_ctl promote -w`: returns once it accepts writes). */
  promote(): Promise<void>;
}

/**
 * Start a hot standby of `primary` (a {@linkcode startPostgres} server): `pg_basebackup -R` into
 * a temp dir, then the server on a free port, read-only until {@linkcode PostgresStandby.promote}.
 */
export async function startPostgresStandby(primary: SqlServer): Promise<PostgresStandby> {
  const dir = await Deno.makeTempDir({ prefix: "kvid-pg-standby-" });
  let server: LocalSqlServer;
  try {
    const asPg = await asPostgresUser(dir);
    await run(
      [
        ...asPg,
        `${PG_BIN}/pg_basebackup`,
        "-h",
        primary.host,
        "-p",
        String(primary.port),
        "-U",
        primary.user,
        "-D",
        `${dir}/data`,
        "-R",
        "-X",
        "stream",
        "--no-sync",
      ],
      "pg_basebackup",
      { PGPASSWORD: primary.password },
    );
    server = await startOnFreePort("postgres", dir, {});
  } catch (err) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw err;
  }
  return Object.assign(server, {
    async promote() {
      await run([
        ...(await asPostgresUser(dir)),
        `${PG_BIN}/pg_ctl`,
        "promote",
        "-w",
        "-D",
        `${dir}/data`,
      ], "pg_ctl promote");
    },
  });
}

/** Start a MariaDB server with a database `kvid`; the user `root` has no password. */
export async function startMariaDb(options: SqlServerOptions = {}): Promise<SqlServer> {
  const dir = await Deno.makeTempDir({ prefix: "kvid-mariadb-" });
  try {
    await run([
      "mariadb-install-db",
      "--no-defaults",
      `--datadir=${dir}/data`,
      "--auth-root-authentication-method=normal",
      "--skip-test-db",
      // Its own temp dir: the shared /tmp let a concurrent install delete this one's temp table.
      `--tmpdir=${dir}`,
      ...(Deno.uid() === 0 ? ["--user=root"] : []),
    ], "mariadb-install-db");
    // The database the tests use, made by the server itself on first start.
    await Deno.mkdir(`${dir}/data/kvid`);
    return await startOnFreePort("mariadb", dir, options);
  } catch (err) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw err;
  }
}

/**
 * Start a server on the data in `dir` on a free port. A port picked free is free when picked,
 * not when the server binds it: another process may take it in between, and then the server is
 * started again on another one (3 tries).
 */
async function startOnFreePort(
  kind: "postgres" | "mariadb",
  dir: string,
  options: SqlServerOptions,
): Promise<LocalSqlServer> {
  for (let attempt = 1;; attempt++) {
    const server = new LocalSqlServer(kind, dir, freePort(), options);
    try {
      await server.start();
      return server;
    } catch (err) {
      const taken = /Address already in use|Bind on TCP\/IP port/i.test(server.log());
      if (!taken || attempt === 3) throw err;
    }
  }
}

/** The password of the PostgreSQL superuser `kvid` (TCP logins check it: scram-sha-256). */
export const PG_PASSWORD = "kvid-test";

const INITDB_ARGS = (dir: string) => [
  "-D",
  `${dir}/data`,
  "-U",
  "kvid",
  `--pwfile=${dir}/pwfile`,
  "--auth-local=trust",
  "--auth-host=scram-sha-256",
  "-E",
  "UTF8",
  "--locale=C",
  "--no-sync",
  "--no-instructions",
];

class LocalSqlServer implements SqlServer {
  readonly kind: "postgres" | "mariadb";
  readonly host = HOST;
  readonly port: number;
  readonly user: string;
  readonly database: string;
  readonly password: string;
  readonly #dir: string;
  readonly #options: SqlServerOptions;
  #child: Deno.ChildProcess | undefined;
  #status: Promise<Deno.CommandStatus> | undefined;
  #drain: Promise<void> | undefined;
  #output = "";

  constructor(
    kind: "postgres" | "mariadb",
    dir: string,
    port: number,
    options: SqlServerOptions,
  ) {
    this.kind = kind;
    this.#dir = dir;
    this.port = port;
    this.#options = options;
    this.user = kind === "postgres" ? "kvid" : "root";
    this.database = kind === "postgres" ? "postgres" : "kvid";
    this.password = kind === "postgres" ? PG_PASSWORD : "";
  }

  get url(): string {
    return this.kind === "postgres"
      ? `postgres://${this.user}:${this.password}@${HOST}:${this.port}/${this.database}`
      : `mysql://${this.user}@${HOST}:${this.port}/${this.database}`;
  }

  log(): string {
    return this.#output.split("\n").slice(-30).join("\n");
  }

  async start(): Promise<void> {
    if (this.#child !== undefined) throw new Error(`${this.kind} is already running`);
    const argv = this.kind === "postgres"
      ? [
        ...(await asPostgresUser(this.#dir)),
        `${PG_BIN}/postgres`,
        "-D",
        `${this.#dir}/data`,
        "-k",
        this.#dir,
        "-h",
        HOST,
        "-p",
        String(this.port),
        ...Object.entries(this.#options.settings ?? {}).flatMap(([k, v]) => ["-c", `${k}=${v}`]),
      ]
      : [
        "mariadbd",
        "--no-defaults",
        `--datadir=${this.#dir}/data`,
        `--port=${this.port}`,
        `--bind-address=${HOST}`,
        `--socket=${this.#dir}/mariadb.sock`,
        `--pid-file=${this.#dir}/mariadb.pid`,
        `--tmpdir=${this.#dir}`,
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=32M",
        ...(Deno.uid() === 0 ? ["--user=root"] : []),
        ...Object.entries(this.#options.settings ?? {}).map(([k, v]) => `--${k}=${v}`),
      ];
    // A standby says "ready to accept read-only connections".
    const ready = this.kind === "postgres"
      ? "database system is ready to accept"
      : "ready for connections";
    const child = new Deno.Command("setsid", {
      args: argv,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.#child = child;
    this.#status = child.status;
    let signal: () => void = () => {};
    const seen = new Promise<void>((resolve) => (signal = resolve));
    this.#output = "";
    this.#drain = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of child.stderr) {
          this.#output = (this.#output + decoder.decode(chunk)).slice(-20_000);
          if (this.#output.includes(ready)) signal();
        }
      } catch {
        // the process is gone
      }
    })();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      seen.then(() => "ready"),
      this.#status.then((s) => `exited with ${s.code}`),
      new Promise<string>((resolve) => {
        timer = setTimeout(
          () => resolve(`not ready within ${START_TIMEOUT_MS} ms`),
          START_TIMEOUT_MS,
        );
      }),
    ]);
    clearTimeout(timer);
    if (outcome !== "ready") {
      const log = this.log();
      await this.kill();
      throw new Error(`${this.kind} on port ${this.port} did not start: ${outcome}\n${log}`);
    }
  }

  killNow(): void {
    try {
      if (this.#child !== undefined) Deno.kill(-this.#child.pid, "SIGKILL");
    } catch {
      // already gone
    }
    try {
      Deno.removeSync(this.#dir, { recursive: true });
    } catch {
      // already gone
    }
  }

  async kill(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    try {
      Deno.kill(-child.pid, "SIGKILL"); // the whole group: postmaster and backends
    } catch {
      // already gone
    }
    await this.#status;
    await this.#drain;
    this.#child = undefined;
  }

  async stop(options: { keepData?: boolean } = {}): Promise<void> {
    const child = this.#child;
    if (child !== undefined) {
      try {
        // PostgreSQL: SIGINT is the fast shutdown (SIGTERM waits for clients to leave).
        child.kill(this.kind === "postgres" ? "SIGINT" : "SIGTERM");
      } catch {
        // already gone
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = await Promise.race([
        this.#status!.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), STOP_TIMEOUT_MS);
        }),
      ]);
      clearTimeout(timer);
      if (late) await this.kill();
      else {
        // Helpers of the server left behind by a shutdown that did not wait for them.
        try {
          Deno.kill(-child.pid, "SIGKILL");
        } catch {
          // none
        }
        await this.#drain;
        this.#child = undefined;
      }
    }
    if (!options.keepData) await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** As root, the prefix that runs a command as the user `postgres` (owning `dir`); else none. */
async function asPostgresUser(dir: string): Promise<string[]> {
  if (Deno.uid() !== 0) return [];
  const [uid, gid] = await postgresIds();
  await Deno.chown(dir, uid, gid);
  return ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--"];
}

/** The uid and gid of the user `postgres` (as root), or this process's. */
async function postgresIds(): Promise<[number, number]> {
  if (Deno.uid() !== 0) return [Deno.uid()!, Deno.gid()!];
  const line = (await Deno.readTextFile("/etc/passwd")).split("\n").find((l) =>
    l.startsWith("postgres:")
  );
  if (line === undefined) throw new Error("no user postgres: install the postgresql package");
  const [, , uid, gid] = line.split(":");
  return [Number(uid), Number(gid)];
}

async function run(argv: string[], what: string, env?: Record<string, string>): Promise<void> {
  const out = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
    throw new Error(`${what} failed (exit ${out.code}):\n${text.slice(-2000)}`);
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: HOST, port: 0 });
  try {
    return (listener.addr as Deno.NetAddr).port;
  } finally {
    listener.close();
  }
}

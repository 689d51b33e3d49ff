/**
 * The PostgreSQL store's connection room: its pool, prepared statements, the retry of operations
 * after connection faults, and how database errors become errand's.
 * @module
 */
import type pg from "pg";
import type { Logger } from "pino";
import { defaultLogger } from "../../default-logger.js";
import { ErrandError } from "../../errors.js";
import { pgModule } from "./pg.js";

/** Anything that runs a query: a `pg.Pool`, `pg.Client` or `pg.PoolClient`. */
export interface Queryable {
  query(config: pg.QueryConfig): Promise<pg.QueryResult>;
  query(text: string): Promise<pg.QueryResult>;
}

/** bigint columns (epoch ms, priorities, counts) come back as numbers, not strings. */
const INT8_OID = 20;
const TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID && format !== "binary"
      ? (value: string) => Number(value)
      : pgModule.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

/** A fault that a fresh connection (and a moment) may cure; anything else is thrown at once. */
function isTransient(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === "string" ? e.code : "";
  if (code.startsWith("08")) return true; // connection exceptions
  if (["57P01", "57P02", "57P03", "40001", "40P01", "53300"].includes(code)) return true;
  if (["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"].includes(code))
    return true;
  const message = typeof e?.message === "string" ? e.message : "";
  return /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect/i.test(
    message,
  );
}

/** A fault that leaves the session unusable: its connection is thrown away, not reused. */
function isConnectionFault(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return isTransient(error) && code !== "40001" && code !== "40P01" && code !== "53300";
}

/** How long a closing connection waits for the server's goodbye before its socket is destroyed. */
export const GOODBYE_MS = 2_000;

/**
 * A connection errand has checked out of the pool, as the statement deadline's watchdog sees it:
 * fields set on the `pg.PoolClient` itself, so a statement allocates nothing for its deadline.
 */
interface Watched extends pg.PoolClient {
  /** Statements of errand's sent on this connection and not yet answered. */
  errandBusy?: number;
  /** `performance.now()` when the connection last started or finished one of them. */
  errandSince?: number;
  /** Set by the watchdog as it destroys the connection: its statements fail as timed out. */
  errandTimedOut?: boolean;
  /** The fault the connection emitted while checked out, if any. */
  errandBroken?: Error;
}

/** The `error` listener of a connection checked out for one statement: one function for all, no closure. */
function noteBroken(this: Watched, error: Error): void {
  this.errandBroken = error;
}

/**
 * The opening message of a tracked operation's transaction ({@link OpOptions.tracked}): BEGIN, the
 * transaction's id and its backend's pid in one simple-query message, so tracking costs no round
 * trip of its own. `txid_current()` assigns the id at once (a transaction that writes has one
 * anyway). The pid is the server's own, not node-postgres's `processID`, which a pooler in between
 * (PgBouncer) makes up.
 */
const BEGIN_TRACKED = "BEGIN; SELECT txid_current()::text AS txid, pg_backend_pid() AS pid";

/** Whether a transaction committed, asked after its COMMIT's reply was lost (PostgreSQL ≥ 10). */
const TXID_STATUS = "SELECT txid_status($1::bigint) AS status";

/**
 * Ends the backend still holding a tracked transaction that errand has given up on, so that
 * `txid_status` stops saying "in progress". Only that transaction can be cut short: the backend
 * must have the pid that ran it and still be running it (`backend_xid`, the 32-bit id, is unique
 * among running transactions, so a pid since reused by another backend does not match), and must
 * be waiting for its client inside it ("idle in transaction": our COMMIT never reached it). A
 * backend running something (our COMMIT, perhaps waiting for a synchronous standby, where
 * terminating it would make visible a commit that no standby has confirmed) is left to finish.
 * Another role's backends are hidden from, or refused (42501) to, a role that may not signal
 * them; errand then waits as before.
 */
const TERMINATE_TRACKED = `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
 WHERE pid = $1 AND backend_xid::text = ($2::bigint % 4294967296)::text
   AND state IN ('idle in transaction', 'idle in transaction (aborted)')`;

/**
 * How long a backend errand terminated gets to be gone, past the operation's `retryMs`: it aborts
 * at its next interrupt check, in milliseconds. A lost reply that the watchdog caught comes
 * `queryTimeoutMs` after the COMMIT went out, often past `retryMs`; the question that follows the
 * termination still gets its answer.
 */
const TERMINATED_EXIT_MS = 1_000;

/** How {@link PgConnection.op} runs an operation and its retries. */
export interface OpOptions {
  /**
   * The mode a retry runs in, so that a retry that must check for an earlier try's lost commit
   * can do so in one transaction.
   * @defaultValue the first try's mode
   */
  retryMode?: "pool" | "tx";
  /**
   * Tracked: the operation runs in a transaction (whatever the mode) whose id is fetched with its
   * BEGIN; when the connection fails once its COMMIT is sent (or the `queryTimeoutMs` watchdog
   * closes it then), the server is asked whether that transaction committed (`txid_status`) before
   * anything runs again. Committed: the operation's answer is the one it computed in that
   * transaction, and nothing is written again. Aborted: it runs again as an untracked one would,
   * within `retryMs`. Still in progress with its backend waiting for a COMMIT that never came (a
   * half-open connection): that backend is terminated where the server permits, so the answer is
   * "aborted" at once rather than when TCP keep-alive notices. For operations whose retry could apply a change twice
   * or answer wrongly (a debounce, a retry by id, a pause); not for the drain's hot paths, which
   * would pay a transaction where they run one statement.
   * @defaultValue false
   */
  tracked?: boolean;
}

/**
 * What a tracked transaction has reached: its id and its backend's pid once BEGIN answered, its
 * answer once COMMIT was sent, and whether the watchdog closed its connection.
 */
interface Tracking<T> {
  txid?: string;
  pid?: number;
  committing?: { value: T };
  timedOut?: boolean;
}

/** 32-bit FNV-1a, for short stable prepared-statement names. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(36);
}

/** What {@link PgConnection} takes from the store's options. */
export interface PgConnectionOptions {
  /** How long an operation retries after a connection fault. @defaultValue 10_000 */
  retryMs?: number;
  /** How long one statement waits for its answer; `0`: for ever. @defaultValue 30_000 */
  queryTimeoutMs?: number;
  /** Where faults are logged. @defaultValue pino at level "warn" */
  logger?: Logger;
}

/**
 * One pool and the rules for using it: each statement prepared once per connection, operations
 * retried after a connection fault until `retryMs` has passed, a broken connection destroyed
 * rather than handed on, and a close that waits for the operations under way.
 *
 * The statement deadline (`queryTimeoutMs`) costs no timer per statement. Each statement of
 * errand's runs on a connection errand checked out itself (a pool-level statement too: checked
 * out, run and released here, as `pool.query` would), which it stamps with the time and keeps in
 * a set while a statement is unanswered. One watchdog interval per connection room (unref'd, a
 * quarter of the deadline and at most 5 s apart, stopped at the first tick with nothing
 * unanswered and on close) destroys the socket of any connection that has had no answer for the
 * deadline; node-postgres then fails its statements, which fail as `STORE_ERROR`, not retried
 * (they may have run), except a tracked operation's COMMIT, whose outcome the server is asked.
 * The LISTEN connection, migrations and a caller's own client are never stamped.
 */
export class PgConnection {
  readonly pool: pg.Pool;
  readonly #ownsPool: boolean;
  readonly #logger: Logger | undefined;
  readonly #retryMs: number;
  /** How long a connection may go without answering errand's statement; 0: for ever. */
  readonly #deadlineMs: number;
  /** The connections with a statement of errand's unanswered, which the watchdog looks at. */
  readonly #watched = new Set<Watched>();
  /** The watchdog, while it runs. */
  #watchdog: NodeJS.Timeout | undefined;
  readonly #begin: pg.QueryConfig;
  readonly #beginTracked: pg.QueryConfig;
  readonly #commit: pg.QueryConfig;
  readonly #rollback: pg.QueryConfig;
  readonly #names = new Map<string, string>();
  #inFlight = 0;
  #idle: Array<() => void> = [];
  #closed = false;
  /** The pool's connections not yet closed, when the pool is errand's own (ended on close). */
  readonly #open = new Set<pg.Client>();

  /** @param ownsPool - whether the pool is errand's own, ended on close (else the caller's, left open). */
  constructor(pool: pg.Pool, ownsPool: boolean, options: PgConnectionOptions) {
    this.pool = pool;
    this.#ownsPool = ownsPool;
    this.#logger = options.logger;
    this.#retryMs = options.retryMs ?? 10_000;
    this.#deadlineMs = options.queryTimeoutMs ?? 30_000;
    this.#begin = { text: "BEGIN" };
    this.#beginTracked = { text: BEGIN_TRACKED };
    this.#commit = { text: "COMMIT" };
    this.#rollback = { text: "ROLLBACK" };
    // An idle pooled connection that dies emits "error" on the pool; unheard, it would crash the process.
    pool.on("error", this.#onPoolError);
    if (ownsPool) {
      // "remove" comes once a connection has closed (pg-pool emits it from client.end's callback).
      pool.on("connect", (client) => this.#open.add(client));
      pool.on("remove", (client) => this.#open.delete(client));
    }
  }

  /** True from the start of {@link drain}: new operations are refused. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Where faults are logged; pino is loaded only when there is something to log. */
  get log(): Logger {
    return this.#logger ?? defaultLogger();
  }

  readonly #onPoolError = (error: Error): void => {
    this.log.warn({ err: error }, "errand: an idle PostgreSQL connection failed; the pool replaces it");
  };

  #name(text: string): string {
    let name = this.#names.get(text);
    if (!name) {
      name = `errand_${fnv1a(text)}`;
      this.#names.set(text, name);
    }
    return name;
  }

  /** Runs one statement (prepared once per connection) and returns its rows (as arrays with `raw`). */
  async query<R = Record<string, unknown>>(
    db: Queryable,
    text: string,
    values: unknown[],
    raw = false,
  ): Promise<R[]> {
    // Prepared statements only on errand's own connections: a caller's client is left as it was.
    // The deadline too: a caller's connection is the caller's to time out.
    const onPool = db === this.pool;
    const owned = onPool || (db as { errandOwned?: boolean }).errandOwned === true;
    const config: pg.QueryConfig = owned
      ? { name: this.#name(text), text, values, types: TYPES }
      : { text, values, types: TYPES };
    if (raw) (config as { rowMode?: string }).rowMode = "array";
    const result = onPool
      ? await this.#onPool(config)
      : owned
        ? await this.#run(db as Watched, config)
        : await db.query(config);
    return result.rows as R[];
  }

  /**
   * Runs one statement on a connection checked out of the pool for it and released after, as
   * `pool.query` does (and as frugally: callbacks, one promise), so that the watchdog knows the
   * connection; the connection is destroyed only after a connection fault (`pool.query` destroys
   * it after any error).
   */
  #onPool(config: pg.QueryConfig): Promise<pg.QueryResult> {
    return new Promise((resolve, reject) => {
      this.pool.connect((connectError, checkedOut) => {
        if (connectError || !checkedOut) {
          reject(connectError);
          return;
        }
        const client = checkedOut as Watched;
        // A checked-out connection that dies emits "error" besides failing its statement;
        // unheard, that would crash the process.
        client.on("error", noteBroken);
        const done = (error: Error | null, result?: pg.QueryResult) => {
          this.#answered(client);
          client.removeListener("error", noteBroken);
          const broken =
            error && (client.errandTimedOut || isConnectionFault(error)) ? error : client.errandBroken;
          client.errandBroken = undefined;
          client.release(broken);
          if (error) reject(this.#fault(client, error));
          else resolve(result!);
        };
        this.#send(client, config, done);
      });
    });
  }

  /**
   * Runs one statement on a connection errand checked out for a transaction, watched for the
   * deadline (callbacks and one promise, no more than the `client.query` it replaces).
   * @throws ErrandError `STORE_ERROR` (not retried) when the watchdog destroyed the connection.
   */
  #run(client: Watched, config: pg.QueryConfig): Promise<pg.QueryResult> {
    if (this.#deadlineMs === 0) return client.query(config);
    return new Promise((resolve, reject) => {
      const done = (error: Error | null, result?: pg.QueryResult) => {
        this.#answered(client);
        if (error) reject(this.#fault(client, error));
        else resolve(result!);
      };
      this.#send(client, config, done);
    });
  }

  /** Sends `config` on `client`, noted for the watchdog; `done` hears its answer or failure. */
  #send(
    client: Watched,
    config: pg.QueryConfig,
    done: (error: Error | null, result?: pg.QueryResult) => void,
  ): void {
    this.#sent(client);
    try {
      client.query(config, done);
    } catch (error) {
      done(error as Error);
    }
  }

  /**
   * Notes a statement sent on `client`: the connection is stamped when it has a statement
   * unanswered (and again at each answer while it still has one), and the watchdog destroys it
   * once a stamp is older than the deadline.
   */
  #sent(client: Watched): void {
    if (this.#deadlineMs === 0) return;
    if (client.errandBusy === undefined || client.errandBusy === 0) {
      client.errandBusy = 1;
      this.#watched.add(client);
      this.#watch();
    } else client.errandBusy++;
    client.errandSince = performance.now();
  }

  /** Notes the answer (or failure) of a statement {@link #sent} on `client`. */
  #answered(client: Watched): void {
    if (this.#deadlineMs === 0) return;
    if (--(client as { errandBusy: number }).errandBusy === 0) this.#watched.delete(client);
    else client.errandSince = performance.now();
  }

  /** A statement's failure as thrown: `STORE_ERROR` if the watchdog closed its connection. */
  #fault(client: Watched, error: Error): Error {
    if (!client.errandTimedOut) return error;
    return new ErrandError(
      "STORE_ERROR",
      `no answer from PostgreSQL within queryTimeoutMs (${this.#deadlineMs} ms); its connection was closed, and the statement may have run`,
      { cause: error },
    );
  }

  /** Starts the watchdog unless it runs. */
  #watch(): void {
    if (this.#watchdog !== undefined) return;
    const periodMs = Math.max(1, Math.min(5_000, Math.ceil(this.#deadlineMs / 4)));
    this.#watchdog = setInterval(this.#scan, periodMs);
    // A statement in flight keeps the process alive by its socket; the watchdog never does.
    this.#watchdog.unref();
  }

  /** The watchdog's tick: destroys each connection past the deadline; stops once none is watched. */
  readonly #scan = (): void => {
    if (this.#watched.size === 0) {
      this.#unwatch();
      return;
    }
    const late = performance.now() - this.#deadlineMs;
    for (const client of this.#watched) {
      if (client.errandTimedOut || (client.errandSince ?? late) > late) continue;
      client.errandTimedOut = true;
      this.log.warn(
        { queryTimeoutMs: this.#deadlineMs },
        "errand: no answer from PostgreSQL within queryTimeoutMs; closing the connection",
      );
      // Not client.end(): its goodbye would wait on the same silence. A destroyed socket makes
      // node-postgres fail the connection's statements at once (and emit "error", heard by
      // noteBroken or the transaction's listener); the pool then discards it.
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    }
  };

  /** Stops the watchdog. */
  #unwatch(): void {
    if (this.#watchdog === undefined) return;
    clearInterval(this.#watchdog);
    this.#watchdog = undefined;
  }

  /**
   * Has the transaction `db` belongs to (an `op("tx")`'s) run `text` last, sent with its COMMIT in
   * one message: a statement that must come last saves its own round trip. `text` takes no
   * parameters (the simple query protocol): every value in it is a literal (such as
   * {@link sqlTextArray}'s). If it fails, nothing of the transaction is committed.
   */
  atCommit(db: Queryable, text: string): void {
    const owned = db as { errandOwned?: boolean; errandAtCommit?: string };
    if (!owned.errandOwned || owned.errandAtCommit !== undefined) {
      throw new Error("atCommit: not in an errand transaction, or a statement already waits for its commit");
    }
    owned.errandAtCommit = text;
  }

  /**
   * Runs `fn` on the pool (`"pool"`: each statement on any connection) or in a transaction on one
   * connection (`"tx"`), retrying the whole of it after a connection fault, a deadlock or a
   * serialisation failure until `retryMs` has passed. Every operation is compare-and-set, so a
   * retry cannot apply a change twice. `fn` learns whether it is such a retry (`again`): an earlier
   * try may then have committed with its reply lost, and what it wrote may have moved on since (an
   * inserted job claimed, run and moved to history); a retry runs in `retryMode`, so that it can
   * check for that in one transaction.
   *
   * A tracked operation ({@link OpOptions.tracked}) does not guess: when the fault cut off its
   * COMMIT's reply, the server says whether the transaction committed, and a committed one is
   * answered with what `fn` returned in it. Its `again` is then true only when the server could
   * not tell (the transaction too old for its commit log), since a try that failed before its
   * COMMIT, or was aborted, stored nothing.
   * @param options - {@link OpOptions}, or the retry mode alone.
   */
  op<T>(
    mode: "pool" | "tx",
    fn: (db: Queryable, again: boolean) => Promise<T>,
    options: OpOptions | "pool" | "tx" = {},
  ): Promise<T> {
    const { retryMode = mode, tracked = false } =
      typeof options === "string" ? { retryMode: options } : options;
    return this.#counted(async () => {
      const deadline = Date.now() + this.#retryMs;
      let again = false;
      for (let attempt = 0; ; attempt++) {
        const tracking: Tracking<T> | undefined = tracked ? {} : undefined;
        try {
          if (tracking) return await this.#transaction((db) => fn(db, again), tracking);
          return (again ? retryMode : mode) === "pool"
            ? await fn(this.pool, again)
            : await this.#transaction((db) => fn(db, again));
        } catch (error) {
          // A COMMIT sent and its reply lost, to a fault or to the watchdog: the watchdog's error
          // says "may have run", which the server can settle as well as any other lost reply.
          const lost =
            tracking?.committing !== undefined &&
            tracking.txid !== undefined &&
            (tracking.timedOut === true || isConnectionFault(error));
          if (error instanceof ErrandError && !lost) throw error;
          let fault = error;
          if (lost) {
            const landed = await this.#committed(tracking.txid!, tracking.pid, deadline);
            if (landed === "committed") {
              this.log.warn({ err: error }, "errand: a PostgreSQL commit's reply was lost; it committed");
              return tracking.committing!.value;
            }
            if (landed === "unknown") {
              throw storeError(
                error,
                "PostgreSQL operation failed, and whether its commit landed is unknown",
              );
            }
            // Aborted: nothing of it is stored. Too old to tell: the retry must look.
            if (landed === "untold") again = true;
            else if (tracking.timedOut) fault = this.#notCommitted(error);
          } else if (!tracking) again = true;
          if (!(lost || isTransient(error)) || this.#closed || Date.now() >= deadline) {
            throw storeError(fault, "PostgreSQL operation failed");
          }
          const delay = Math.min(1_000, 25 * 2 ** attempt, Math.max(0, deadline - Date.now()));
          this.log.warn({ err: error, retryInMs: delay }, "errand: PostgreSQL connection fault; retrying");
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    });
  }

  /**
   * The watchdog's error for a transaction that cannot have committed: cut before its COMMIT went
   * out, or a tracked COMMIT the server then said was aborted. Nothing of it is stored.
   */
  #notCommitted(error: unknown): ErrandError {
    return new ErrandError(
      "STORE_ERROR",
      `no answer from PostgreSQL within queryTimeoutMs (${this.#deadlineMs} ms); its connection was closed, and its transaction did not commit`,
      { cause: (error as { cause?: unknown }).cause ?? error },
    );
  }

  /**
   * Whether transaction `txid`, whose COMMIT's reply was lost, committed: asked on a fresh
   * connection of the pool. "in progress" (the server has not yet seen its client go, or is still
   * committing) is asked again, 25 ms later and doubling, until `deadline`: the server aborts a
   * transaction whose client has gone. "untold": too old for the server's commit log (NULL).
   *
   * The server sees the client go only if the close reaches it: over a half-open connection (a
   * network that drops packets) its backend waits inside the transaction until TCP keep-alive
   * gives up, minutes on, and "in progress" would outlast `deadline`. So at the first "in
   * progress" the backend `pid` that ran the transaction is terminated if it still holds it idle
   * ({@link TERMINATE_TRACKED}): safe, since errand released that connection before asking (op()
   * asks only after {@link #transaction} let it go as broken), so nothing of errand's can still
   * reach that backend, and a terminated backend aborts a transaction it has not begun to commit
   * and leaves a committed one committed; the next answer says which. Tried once: a refusal (the
   * backend another role's) or a miss falls back to waiting.
   */
  async #committed(
    txid: string,
    pid: number | undefined,
    deadline: number,
  ): Promise<"committed" | "aborted" | "untold" | "unknown"> {
    let terminating = pid !== undefined;
    for (let waitMs = 25; ; waitMs *= 2) {
      let inProgress = false;
      try {
        const [row] = await this.query<{ status: string | null }>(this.pool, TXID_STATUS, [txid]);
        if (row?.status === "committed") return "committed";
        if (row?.status === "aborted") return "aborted";
        if (row?.status == null) return "untold";
        inProgress = true;
      } catch (error) {
        // The server itself away (a restart): asked again until the deadline, as op() retries.
        if (error instanceof ErrandError || !isTransient(error))
          throw storeError(error, "txid_status failed");
      }
      if (inProgress && terminating) {
        const ended = await this.#terminate(pid!, txid);
        if (ended !== "again") terminating = false;
        if (ended === "terminated") deadline = Math.max(deadline, Date.now() + TERMINATED_EXIT_MS);
      }
      const leftMs = deadline - Date.now();
      if (leftMs <= 0) return "unknown";
      await new Promise((resolve) => setTimeout(resolve, Math.min(waitMs, leftMs)));
    }
  }

  /**
   * Terminates backend `pid` if it still holds transaction `txid` idle ({@link TERMINATE_TRACKED}).
   * "again": a transient fault, worth another try at the next "in progress"; "refused": not
   * permitted, or failed otherwise, so op() waits for the server to notice, as without it.
   */
  async #terminate(pid: number, txid: string): Promise<"terminated" | "missed" | "refused" | "again"> {
    try {
      const [row] = await this.query<{ terminated: boolean }>(this.pool, TERMINATE_TRACKED, [pid, txid]);
      if (!row?.terminated) return "missed";
      this.log.warn(
        { pid },
        "errand: terminated the PostgreSQL backend still holding a transaction whose COMMIT's reply was lost",
      );
      return "terminated";
    } catch (error) {
      if (!(error instanceof ErrandError) && isTransient(error)) return "again";
      this.log.warn(
        { err: error, pid },
        "errand: could not terminate the PostgreSQL backend holding a transaction whose COMMIT's reply was lost; waiting for the server to end it",
      );
      return "refused";
    }
  }

  /**
   * Runs one statement on the pool once, as an operation {@link drain} waits for but without
   * {@link op}'s retries: for a best-effort statement whose caller does not wait for it (a
   * wake-up's NOTIFY), which must still go out before the pool ends.
   */
  queryOnce(text: string, values: unknown[]): Promise<void> {
    return this.#counted(async () => {
      await this.#onPool({ text, values });
    });
  }

  /** Runs `run` as an operation in flight, which close() waits for; refused once closed. */
  async #counted<T>(run: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new ErrandError("CLOSED", "the PostgreSQL store is closed");
    this.#inFlight++;
    try {
      return await run();
    } finally {
      if (--this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  /**
   * Runs `fn` in a transaction on one connection. With `tracking`, BEGIN also fetches the
   * transaction's id and its backend's pid, and `fn`'s answer is kept there before the COMMIT goes out, for op() to
   * return should the COMMIT's reply be lost and the transaction have committed.
   */
  async #transaction<T>(fn: (db: Queryable) => Promise<T>, tracking?: Tracking<T>): Promise<T> {
    const client = (await this.pool.connect()) as Watched;
    (client as { errandOwned?: boolean }).errandOwned = true;
    let broken: Error | undefined;
    let commitSent = false;
    // A checked-out client whose connection dies emits "error" besides failing its query;
    // unheard, that would crash the process.
    const onError = (error: Error) => {
      broken = error;
    };
    client.on("error", onError);
    try {
      if (tracking) {
        // A multi-statement simple query answers with one result per statement.
        const opened = (await this.#run(client, this.#beginTracked)) as unknown as pg.QueryResult[];
        const row = opened[1]!.rows[0]!;
        tracking.txid = String(row.txid);
        tracking.pid = Number(row.pid);
      } else await this.#run(client, this.#begin);
      const result = await fn(client);
      const last = (client as { errandAtCommit?: string }).errandAtCommit;
      if (tracking) tracking.committing = { value: result };
      commitSent = true;
      // The COMMIT alone, or after atCommit's statement in the same message (one round trip).
      await this.#run(client, last === undefined ? this.#commit : { text: `${last}\n;\nCOMMIT` });
      return result;
    } catch (error) {
      if (tracking && client.errandTimedOut) tracking.timedOut = true;
      if (client.errandTimedOut || isConnectionFault(error)) broken = error as Error;
      else await this.#run(client, this.#rollback).catch((e: Error) => (broken = e));
      // The watchdog cut a statement before the COMMIT went out: the server can only abort this
      // transaction, so the caller may safely call again ("may have run" would say otherwise).
      if (client.errandTimedOut && !commitSent) throw this.#notCommitted(error);
      throw error;
    } finally {
      (client as { errandAtCommit?: string }).errandAtCommit = undefined;
      client.removeListener("error", onError);
      // A broken connection is destroyed, not handed to the next caller.
      client.release(broken);
    }
  }

  /** Refuses new operations from now on and waits for those under way (a retrying one gives up). */
  async drain(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#inFlight > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  /**
   * Lets go of the pool: ends it if it is errand's own. Call after {@link drain}. A connection
   * whose goodbye gets no answer within {@link GOODBYE_MS} (or queryTimeoutMs, if shorter) is
   * destroyed: on a network gone silent its socket would otherwise wait for TCP to give up,
   * minutes during which it keeps the process from exiting.
   */
  async end(): Promise<void> {
    this.#unwatch();
    this.pool.removeListener("error", this.#onPoolError);
    if (!this.#ownsPool) return;
    // pool.end() resolves once each connection is told goodbye, before the server answers it.
    await this.pool.end();
    if (this.#open.size === 0) return;
    const ms = this.#deadlineMs === 0 ? GOODBYE_MS : Math.min(GOODBYE_MS, this.#deadlineMs);
    const timer = setTimeout(() => {
      for (const client of this.#open) {
        (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      }
      this.#open.clear();
    }, ms);
    // The sockets themselves keep the process alive while they wait; the timer need not.
    timer.unref();
  }
}

/** Runs `fn` on one connection of `pool`, destroying that connection if `fn` met a connection fault. */
export async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on("error", onError);
  try {
    return await fn(client);
  } catch (error) {
    if (isConnectionFault(error)) broken = error as Error;
    throw error;
  } finally {
    client.removeListener("error", onError);
    client.release(broken);
  }
}

/** A database fault as errand reports it: `STORE_ERROR`, saying what failed, with the fault as `cause`. */
export function storeError(error: unknown, what: string): ErrandError {
  if (error instanceof ErrandError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ErrandError("STORE_ERROR", `${what}: ${message}`, { cause: error });
}

/** The index that keeps a unique key to one blocked, pending or active job (migration 0001). */
const UNIQUE_KEY_INDEX = "errand_job_unique_key";

/**
 * A unique-key (or id) clash on moving a job back into the hot set (retry, replay) is the caller's
 * problem, not a fault: `INVALID_STATE`, saying which ({@link uniqueKeyHeld} tells them apart).
 */
export async function uniqueConflict<T>(query: Promise<T>): Promise<T> {
  try {
    return await query;
  } catch (cause) {
    if ((cause as { code?: string }).code === "23505") {
      throw new ErrandError(
        "INVALID_STATE",
        (cause as { constraint?: string }).constraint === UNIQUE_KEY_INDEX
          ? "another blocked, pending or active job holds this job's unique key"
          : "the new id is taken",
        { cause },
      );
    }
    throw cause;
  }
}

/** Whether `error` is {@link uniqueConflict}'s refusal for a unique key another job holds. */
export function uniqueKeyHeld(error: unknown): boolean {
  return (
    error instanceof ErrandError &&
    error.code === "INVALID_STATE" &&
    (error.cause as { constraint?: string } | undefined)?.constraint === UNIQUE_KEY_INDEX
  );
}

/** The pool a store opened from a connection string makes for itself (and ends on close). */
export function createPool(connectionString: string, poolSize: number | undefined): pg.Pool {
  return new pgModule.Pool({
    connectionString,
    // One more than asked: the LISTEN connection is taken from the pool and kept.
    max: (poolSize ?? 10) + 1,
    keepAlive: true,
    connectionTimeoutMillis: 10_000,
    application_name: new URL(connectionString).searchParams.get("application_name") ?? "errand",
  });
}

/** A `text[]` literal of `values` for a statement without parameters ({@link PgConnection.atCommit}). */
export function sqlTextArray(values: readonly string[]): string {
  return `ARRAY[${values.map((v) => pgModule.escapeLiteral(v)).join(", ")}]::text[]`;
}

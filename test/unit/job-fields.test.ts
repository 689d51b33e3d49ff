import { describe, expect, it } from "vitest";
import { expandLuaMarkers, expandSqlMarkers } from "../../scripts/job-field-markers.js";
import { resolveDefaults } from "../../src/define-job.js";
import { type JobRecord, sharedJobDates, toJob } from "../../src/job.js";
import {
  JOB_DEFAULTS,
  JOB_FIELD_NAMES,
  JOB_FIELDS,
  type JobField,
  NEW_JOB_FIELDS,
  PUBLIC_JOB_FIELDS,
  SHARED_FIELDS,
  sameSharedFields,
  shareAllButIdAndPayload,
  standsAlone,
} from "../../src/job-fields.js";
import { sharedSchemas } from "../../src/server/schemas.js";
import { statements as postgresStatements } from "../../src/store/generated/postgres-queries.js";
import { HOT_RECORD_KEYS, hotRecord } from "../../src/store/hot-record.js";
import { jobFromNew } from "../../src/store/instrument.js";
import { withPayload } from "../../src/store/new-jobs.js";
import { INSERT_FIELDS, INSERT_FIXED_PARAMS, sqlFragments } from "../../src/store/postgres/columns.js";
import { decodeJob, HASH_FIELDS, packBackoff, pushNewJob } from "../../src/store/redis/job-codec.js";
import { scriptText } from "../../src/store/redis/scripts.js";
import { renderStatements } from "../../src/store/sql-template.js";
import type { SqliteDependencies } from "../../src/store/sqlite/dependencies.js";
import { insertJobs } from "../../src/store/sqlite/insert.js";
import {
  INSERT_CHUNK,
  INSERT_COLUMNS,
  JOB_COLUMNS,
  SQL as SQLITE_SQL,
  type Statements,
} from "../../src/store/sqlite/statements.js";
import type { NewJob } from "../../src/store/store.js";

const NOW = 1_700_000_000_000;

/** Typed literals: a JobRecord or NewJob key missing here, or one too many, fails the typecheck. */
const record: JobRecord = {
  id: "job-1",
  type: "email",
  queue: "mail",
  state: "active",
  payload: '{"to":"a@b.c"}',
  checkpoint: '{"step":2}',
  result: '"sent"',
  priority: 7,
  weight: 3,
  runAt: NOW + 1,
  expiresAt: NOW + 2,
  attempt: 2,
  maxAttempts: 9,
  backoff: JSON.stringify({ type: "fixed", delayMs: 5000 }),
  retryQueue: "slow",
  delivery: "at_most_once",
  timeoutMs: 30_000,
  uniqueKey: "u-1",
  leaseExpiresAt: NOW + 3,
  workerId: "w-1",
  errors: '[{"attempt":1,"message":"boom","at":1}]',
  leaseExpirations: 1,
  createdAt: NOW - 5,
  startedAt: NOW - 4,
  finishedAt: NOW - 3,
  owner: "alice",
  dependsOn: '["dep-1"]',
  blockedBy: 0,
  onDependencyFailure: "run",
  key: "tenant-7",
  debounceKey: "d-1",
  snoozes: 2,
};
const newJob: NewJob = {
  id: "job-2",
  type: "email",
  queue: "mail",
  payload: '{"to":"a@b.c"}',
  priority: 7,
  weight: 3,
  runAt: NOW + 1,
  expiresAt: NOW + 2,
  maxAttempts: 9,
  backoff: JSON.stringify({ type: "fixed", delayMs: 5000 }),
  retryQueue: "slow",
  delivery: "at_most_once",
  timeoutMs: 30_000,
  uniqueKey: "u-1",
  owner: "alice",
  dependsOn: '["dep-1"]',
  onDependencyFailure: "run",
  key: "tenant-7",
  debounceKey: "d-1",
};

/** The record a fresh insert of `n` holds, built from the table's initial values alone. */
function insertedRecord(n: NewJob, now: number): JobRecord {
  const r = Object.create(null) as Record<string, unknown>;
  for (const f of JOB_FIELDS) {
    r[f.name] = f.newJob ? n[f.name as keyof NewJob] : f.initial === "now" ? now : f.initial;
  }
  return r as unknown as JobRecord;
}

/** A select list's output names: `x AS "y"` → y, `j.id` → id. */
/** A select list's items: split at commas outside quoted SQL strings (a default's JSON has some). */
const listItems = (list: string) => list.split(/,(?=(?:[^']*'[^']*')*[^']*$)/).map((s) => s.trim());
const aliases = (list: string) => listItems(list).map((item) => /"?(\w+)"?$/.exec(item)![1]);
const squash = (s: string) => s.replace(/\s+/g, " ").trim();

describe("the job's field table", () => {
  it("sameSharedFields tells apart two jobs that differ in any one field but the id and the payload", () => {
    const a = { id: "a", payload: "1" } as Record<string, unknown>;
    for (const f of NEW_JOB_FIELDS) if (!(f in a)) a[f] = `v-${f}`;
    const first = a as unknown as NewJob;
    expect(sameSharedFields({ ...first, id: "b", payload: "2" }, first)).toBe(true);
    for (const f of NEW_JOB_FIELDS.filter((x) => x !== "id" && x !== "payload")) {
      expect({ f, same: sameSharedFields({ ...first, [f]: `other-${f}` }, first) }).toEqual({
        f,
        same: false,
      });
    }
  });

  it("has one row per JobRecord field, in the record's order, and one per NewJob field", () => {
    expect(new Set(JOB_FIELD_NAMES).size).toBe(JOB_FIELDS.length);
    expect([...JOB_FIELD_NAMES].sort()).toEqual(Object.keys(record).sort());
    expect(JOB_FIELD_NAMES).toEqual(HOT_RECORD_KEYS);
    expect([...NEW_JOB_FIELDS].sort()).toEqual(Object.keys(newJob).sort());
    // Public Job: every record field but the internal ones, in toJob's order.
    expect(Object.keys(toJob(record))).toEqual(PUBLIC_JOB_FIELDS);
    for (const f of JOB_FIELDS) {
      expect(f.column).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(f.column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())).toBe(f.name);
      // A field a table lacks reads as NULL there, so it must be nullable.
      if (!f.hot || !f.done) expect(f.nullable).toBe(true);
    }
  });

  it("is where an unknown type's defaults come from", () => {
    const resolved = resolveDefaults({});
    expect(resolved).toMatchObject({
      queue: JOB_DEFAULTS.queue,
      priority: JOB_DEFAULTS.priority,
      weight: JOB_DEFAULTS.weight,
      maxAttempts: JOB_DEFAULTS.maxAttempts,
      backoff: JOB_DEFAULTS.backoff,
      retryQueue: JOB_DEFAULTS.retryQueue,
      timeoutMs: JOB_DEFAULTS.timeoutMs,
      delivery: JOB_DEFAULTS.delivery,
    });
    for (const [name, value] of Object.entries(JOB_DEFAULTS)) {
      const row = JOB_FIELDS.find((f) => f.name === name)!;
      expect(row.initial).toEqual(name === "backoff" ? JSON.stringify(value) : value);
    }
  });

  it("matches the literal builders of the enqueue path (withPayload, jobFromNew)", () => {
    expect(Object.keys(withPayload(newJob, "id-3", "{}"))).toEqual(NEW_JOB_FIELDS);
    const { duplicate, ...job } = jobFromNew(
      newJob,
      newJob.id,
      { to: "a@b.c" },
      JSON.parse(newJob.backoff),
      NOW,
      sharedJobDates(),
    );
    expect(duplicate).toBe(false);
    expect(Object.keys(job)).toEqual(PUBLIC_JOB_FIELDS);
    // Every field it does not take from the NewJob is the table's initial value.
    expect(job).toEqual(toJob(insertedRecord(newJob, NOW)));
  });

  it("reads a hot row by position in the table's order", () => {
    const row = JOB_FIELDS.map((_, i) => `v${i}`);
    const r = hotRecord(row) as unknown as Record<string, unknown>;
    JOB_FIELDS.forEach((f, i) => {
      expect(r[f.name]).toBe(f.hot ? `v${i}` : null);
    });
  });
});

describe("which batches take the stores' bulk fast paths", () => {
  // newJob has every field set; `alone` is it with nothing tying it to other jobs.
  const alone: NewJob = { ...newJob, uniqueKey: null, dependsOn: null, debounceKey: null };

  it("a job stands alone without a unique key, dependencies or a debounce key", () => {
    expect(standsAlone(alone)).toBe(true);
    expect(standsAlone({ ...alone, uniqueKey: "k" })).toBe(false);
    expect(standsAlone({ ...alone, dependsOn: '["a"]' })).toBe(false);
    expect(standsAlone({ ...alone, debounceKey: "d" })).toBe(false);
    // A key (per-key rules) ties it to no other job at insert.
    expect(alone.key).toBe("tenant-7");
  });

  it("a batch is uniform when every job shares all but the id and the payload with the first", () => {
    const jobs = [newJob, { ...newJob, id: "id-2", payload: '{"n":2}' }, { ...newJob, id: "id-3" }];
    expect(shareAllButIdAndPayload(jobs)).toBe(true);
    expect(shareAllButIdAndPayload([...jobs, { ...newJob, id: "id-4", priority: 8 }])).toBe(false);
    expect(shareAllButIdAndPayload([])).toBe(false);
  });
});

describe("the SQL column lists derived from the table", () => {
  const pg = sqlFragments("s", "c");

  it("read every field under its record name, NULL where a table lacks the column", () => {
    for (const list of [pg.hotFields!, pg.doneFields!, JOB_COLUMNS.hot, JOB_COLUMNS.done]) {
      expect(aliases(list)).toEqual(JOB_FIELD_NAMES);
    }
    JOB_FIELDS.forEach((f, i) => {
      expect(listItems(pg.hotFields!)[i]!.startsWith("NULL::")).toBe(!f.hot);
      expect(listItems(pg.doneFields!)[i]!.startsWith("NULL::")).toBe(!f.done);
      expect(listItems(JOB_COLUMNS.hot)[i]!.startsWith("CAST(NULL AS ")).toBe(!f.hot);
      expect(listItems(JOB_COLUMNS.done)[i]!.startsWith("CAST(NULL AS ")).toBe(!f.done);
    });
  });

  it("keep the text the statements had before the table (whitespace aside)", () => {
    expect(squash(pg.hotFields!)).toBe(
      squash(`id, type, queue, state, payload, checkpoint, NULL::text AS result, priority, weight,
  run_at AS "runAt", expires_at AS "expiresAt", attempt, max_attempts AS "maxAttempts", backoff,
  retry_queue AS "retryQueue", delivery, timeout_ms AS "timeoutMs", unique_key AS "uniqueKey",
  lease_expires_at AS "leaseExpiresAt", worker_id AS "workerId", errors,
  lease_expirations AS "leaseExpirations", created_at AS "createdAt", started_at AS "startedAt",
  NULL::bigint AS "finishedAt", owner, depends_on AS "dependsOn", blocked_by AS "blockedBy",
  on_dependency_failure AS "onDependencyFailure", key, debounce_key AS "debounceKey", snoozes`),
    );
    expect(squash(pg.doneFields!)).toBe(
      squash(`id, type, queue, state, payload, checkpoint, result, priority, weight,
  run_at AS "runAt", expires_at AS "expiresAt", attempt, max_attempts AS "maxAttempts", backoff,
  retry_queue AS "retryQueue", delivery, timeout_ms AS "timeoutMs", unique_key AS "uniqueKey",
  NULL::bigint AS "leaseExpiresAt", NULL::text AS "workerId", errors,
  lease_expirations AS "leaseExpirations", created_at AS "createdAt", started_at AS "startedAt",
  finished_at AS "finishedAt", owner, depends_on AS "dependsOn", NULL::integer AS "blockedBy",
  on_dependency_failure AS "onDependencyFailure", key, debounce_key AS "debounceKey", snoozes`),
    );
    // SQLite writes the standard backoff policy as '' (storedBackoff) and reads it back whole.
    const backoff = `CASE backoff WHEN '' THEN '${JSON.stringify(JOB_DEFAULTS.backoff)}' ELSE backoff END AS backoff`;
    expect(squash(JOB_COLUMNS.hot)).toBe(
      squash(`id, type, queue, state, payload, checkpoint, CAST(NULL AS TEXT) AS result, priority, weight,
  run_at AS runAt, expires_at AS expiresAt, attempt, max_attempts AS maxAttempts, ${backoff},
  retry_queue AS retryQueue, delivery, timeout_ms AS timeoutMs, unique_key AS uniqueKey,
  lease_expires_at AS leaseExpiresAt, worker_id AS workerId, errors,
  lease_expirations AS leaseExpirations, created_at AS createdAt, started_at AS startedAt,
  CAST(NULL AS INTEGER) AS finishedAt, owner, depends_on AS dependsOn,
  CAST(CASE WHEN state = 'blocked' THEN (SELECT b.blocked_by FROM errand_blocked AS b
    WHERE b.job_id = errand_job.id) ELSE 0 END AS INTEGER) AS blockedBy,
  on_dependency_failure AS onDependencyFailure, key, debounce_key AS debounceKey, snoozes`),
    );
    expect(squash(JOB_COLUMNS.done)).toBe(
      squash(`id, type, queue, state, payload, checkpoint, result, priority, weight,
  run_at AS runAt, expires_at AS expiresAt, attempt, max_attempts AS maxAttempts, ${backoff},
  retry_queue AS retryQueue, delivery, timeout_ms AS timeoutMs, unique_key AS uniqueKey,
  CAST(NULL AS INTEGER) AS leaseExpiresAt, CAST(NULL AS TEXT) AS workerId, errors,
  lease_expirations AS leaseExpirations, created_at AS createdAt, started_at AS startedAt,
  finished_at AS finishedAt, owner, depends_on AS dependsOn, CAST(NULL AS INTEGER) AS blockedBy,
  on_dependency_failure AS onDependencyFailure, key, debounce_key AS debounceKey, snoozes`),
    );
    expect(squash(pg.sharedColumns!)).toBe(
      squash(`id, type, queue, payload, checkpoint, priority, weight, run_at, expires_at, attempt,
  max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, errors, lease_expirations,
  created_at, started_at, owner, depends_on, on_dependency_failure, key, debounce_key, snoozes`),
    );
    expect(squash(pg.insertJob!)).toBe(
      squash(`INSERT INTO "s".errand_job (id, type, queue, state, payload, priority, weight, run_at,
    expires_at, max_attempts, backoff, retry_queue, delivery, timeout_ms, unique_key, owner, depends_on,
    on_dependency_failure, key, debounce_key, created_at)`),
    );
  });

  it("PostgreSQL inserts a NewJob's fields in the table's order, then created_at", () => {
    const columns = /\(([^)]*)\)/
      .exec(pg.insertJob!)![1]!
      .split(",")
      .map((c) => c.trim());
    const byColumn = new Map(JOB_FIELDS.map((f) => [f.column, f.name]));
    expect(columns.filter((c) => c !== "state" && c !== "created_at").map((c) => byColumn.get(c))).toEqual(
      NEW_JOB_FIELDS,
    );
    expect(columns.at(-1)).toBe("created_at");
  });

  it("SQLite binds each insert column to its NewJob field, one row or a chunk at a time", () => {
    const calls: unknown[][] = [];
    const noop = { run: () => ({ changes: 0 }) };
    const q = {
      enqueueFinishedId: { get: () => undefined },
      enqueueDebounced: { get: () => undefined },
      debounceHolder: { get: () => undefined },
      enqueueOne: { run: (...args: unknown[]) => ({ changes: calls.push(args) && 1 }) },
      enqueueChunk: { run: (...args: unknown[]) => ({ changes: calls.push(args) && INSERT_CHUNK }) },
      enqueueChunkSavepoint: noop,
      enqueueChunkRelease: noop,
      enqueueChunkRollback: noop,
    } as unknown as Statements;
    const byColumn = new Map(JOB_FIELDS.map((f) => [f.column, f.name]));
    const expected = INSERT_COLUMNS.filter((c) => c !== "state").map((c) =>
      c === "created_at" ? NOW : newJob[byColumn.get(c) as keyof NewJob],
    );
    // Jobs with a unique key, dependencies or a debounce key go row by row; these have none.
    const job = { ...newJob, uniqueKey: null, dependsOn: null, debounceKey: null };
    const expectedNoKey = expected.map((v) =>
      v === newJob.uniqueKey || v === newJob.dependsOn || v === newJob.debounceKey ? null : v,
    );
    const plan = { dependsOn: newJob.dependsOn!, ids: [], unfinished: 0, failed: null };
    const hooks = {
      existing: () => null,
      expireHolders: () => null,
      record: () => record,
      dependencies: { plan: () => plan, attach: () => true } as unknown as SqliteDependencies,
    };

    insertJobs(q, [newJob], NOW, false, hooks);
    expect(calls).toEqual([expected]);

    calls.length = 0;
    // Jobs that differ in one field besides the id and the payload go through enqueueChunk.
    insertJobs(q, [...new Array(INSERT_CHUNK - 1).fill(job), { ...job, priority: 1 }], NOW, true, hooks);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toEqual([
      ...Array.from({ length: INSERT_CHUNK - 1 }, () => expectedNoKey).flat(),
      ...expectedNoKey.map((v, k) => (k === INSERT_COLUMNS.indexOf("priority") - 1 ? 1 : v)),
    ]);
  });

  it("SQLite binds a uniform chunk's ids and payloads per row and every other insert column once, by name", () => {
    const calls: unknown[][] = [];
    const uniform: unknown[][] = [];
    const noop = { run: () => ({ changes: 0 }) };
    const q = {
      enqueueChunk: { run: (...args: unknown[]) => ({ changes: calls.push(args) && INSERT_CHUNK }) },
      enqueueChunkUniform: { run: (...args: unknown[]) => ({ changes: uniform.push(args) && INSERT_CHUNK }) },
      // A unique key, dependencies or a debounce key send the chunk row by row.
      enqueueOne: { run: () => ({ changes: 1 }) },
      enqueueDebounced: { get: () => undefined },
      debounceHolder: { get: () => undefined },
      enqueueChunkSavepoint: noop,
      enqueueChunkRelease: noop,
      enqueueChunkRollback: noop,
    } as unknown as Statements;
    const plan = { dependsOn: newJob.dependsOn!, ids: [], unfinished: 0, failed: null };
    const hooks = {
      existing: () => null,
      expireHolders: () => null,
      record: () => record,
      dependencies: { plan: () => plan, attach: () => true } as unknown as SqliteDependencies,
    };
    const job = { ...newJob, uniqueKey: null, dependsOn: null, debounceKey: null };
    const jobs = Array.from({ length: INSERT_CHUNK }, (_, i) => ({
      ...job,
      id: `j${i}`,
      payload: `{"i":${i}}`,
    }));
    insertJobs(q, jobs, NOW, true, hooks);
    expect(calls).toHaveLength(0);
    expect(uniform).toHaveLength(1);
    const byColumn = new Map(JOB_FIELDS.map((f) => [f.column, f.name]));
    const named = Object.fromEntries(
      INSERT_COLUMNS.filter((c) => !["id", "payload", "state"].includes(c)).map((c) => [
        c,
        c === "created_at" ? NOW : job[byColumn.get(c) as keyof NewJob],
      ]),
    );
    expect(uniform[0]).toEqual([...jobs.flatMap((j) => [j.id, j.payload]), named]);
    // Every named parameter is one the statement has, and every one it has is bound.
    const params = [...new Set(SQLITE_SQL.enqueueChunkUniform.match(/@\w+/g))].map((x) => x.slice(1));
    expect(params.sort()).toEqual(Object.keys(named).sort());

    // A difference in any one shared field leaves the uniform statement for enqueueChunk.
    const other: Record<string, unknown> = { ...record, ...newJob, type: "other", queue: "other" };
    for (const f of NEW_JOB_FIELDS.filter((x) => x !== "id" && x !== "payload")) {
      calls.length = 0;
      uniform.length = 0;
      const odd = { ...jobs[5]!, [f]: other[f] === job[f] ? `${String(job[f])}x` : other[f] };
      insertJobs(
        q,
        jobs.map((j, i) => (i === 5 ? odd : j)),
        NOW,
        true,
        hooks,
      );
      expect({ f, uniform: uniform.length }).toEqual({ f, uniform: 0 });
    }
  });
});

describe("the job-field markers npm run gen expands in queries/*.sql", () => {
  const columnsOf = (fields: readonly JobField[]) => fields.map((f) => f.column);
  const param = (name: string) =>
    `$${INSERT_FIXED_PARAMS + 1 + NEW_JOB_FIELDS.indexOf(name as keyof NewJob)}`;

  it("SQLite: the insert columns and a row of values for them, from the table", () => {
    expect(listItems(expandSqlMarkers("sqlite", "/*@insertColumns*/", "t"))).toEqual(INSERT_COLUMNS);
    const row = expandSqlMarkers("sqlite", "/*@insertRow*/", "t");
    expect(listItems(row.slice(1, -1))).toEqual(
      INSERT_COLUMNS.map((c) => (c === "state" ? "'pending'" : "?")),
    );
    expect(expandSqlMarkers("sqlite", "  /*@insertRows 3*/", "t").split("\n")).toEqual([
      `  ${row},`,
      `  ${row},`,
      `  ${row}`,
    ]);
  });

  it("PostgreSQL: each insert column's value, after the fixed parameters", () => {
    expect(columnsOf(INSERT_FIELDS).join(", ")).toBe(
      /\(([^)]*)\)/.exec(sqlFragments("s", "c").insertJob!)![1]!.replace(/\s+/g, " "),
    );
    const one = listItems(expandSqlMarkers("postgres", "/*@insertValues one*/", "t"));
    const uniform = listItems(expandSqlMarkers("postgres", "/*@insertValues uniform*/", "t"));
    const unnest = listItems(expandSqlMarkers("postgres", "/*@insertValues unnest*/", "t"));
    INSERT_FIELDS.forEach((f, i) => {
      if (f.name === "state")
        expect([one[i], uniform[i], unnest[i]]).toEqual(["'pending'", "'pending'", "'pending'"]);
      else if (f.name === "createdAt") expect([one[i], uniform[i], unnest[i]]).toEqual(["$1", "$1", "$1"]);
      else {
        expect(one[i]).toMatch(new RegExp(`^\\${param(f.name)}::(text|bigint)$`));
        expect(uniform[i]).toBe(f.name === "id" || f.name === "payload" ? `u.${f.column}` : one[i]);
        expect(unnest[i]).toBe(`u.${f.column}`);
      }
    });
    expect(listItems(expandSqlMarkers("postgres", "/*@unnestColumns*/", "t"))).toEqual(
      NEW_JOB_FIELDS.map((n) => JOB_FIELDS.find((f) => f.name === n)!.column),
    );
    expect(expandSqlMarkers("postgres", "/*@unnestArrays id payload*/", "t")).toBe(
      `${param("id")}::text[], ${param("payload")}::text[]`,
    );
    expect(expandSqlMarkers("postgres", "/*@param owner*/", "t")).toBe(param("owner"));
  });

  it("PostgreSQL: a value for each shared column, the column itself unless the marker says", () => {
    const list = expandSqlMarkers("postgres", "/*@sharedValues id = $2; attempt = 0*/", "t");
    expect(listItems(list)).toEqual(
      columnsOf(SHARED_FIELDS).map((c) => (c === "id" ? "$2" : c === "attempt" ? "0" : c)),
    );
    expect(listItems(sqlFragments("s", "c").sharedColumns!)).toEqual(columnsOf(SHARED_FIELDS));
  });

  it("SQLite: the same, with the values' `?`s in the table's order, as the statement binds them", () => {
    const list = expandSqlMarkers(
      "sqlite",
      "/*@sharedValues run_at = ?; errors = json(?); attempt = 0*/",
      "t",
    );
    expect(listItems(list)).toEqual(
      columnsOf(SHARED_FIELDS).map((c) =>
        c === "run_at" ? "?" : c === "errors" ? "json(?)" : c === "attempt" ? "0" : c,
      ),
    );
    expect(columnsOf(SHARED_FIELDS).indexOf("run_at")).toBeLessThan(
      columnsOf(SHARED_FIELDS).indexOf("errors"),
    );
    // Named the other way round, the marker would read as binding errors' ? first.
    expect(() =>
      expandSqlMarkers("sqlite", "/*@sharedValues errors = json(?); run_at = ?*/", "a.sql"),
    ).toThrow(
      "a.sql: /*@sharedValues errors = json(?); run_at = ?*/: name the values with ? in the table's order: run_at, errors",
    );
    // Without ? the order is free.
    expect(expandSqlMarkers("sqlite", "/*@sharedValues errors = '[]'; run_at = 1*/", "t")).toBe(
      expandSqlMarkers("sqlite", "/*@sharedValues run_at = 1; errors = '[]'*/", "t"),
    );
  });

  it("refuses what it cannot expand, naming the file", () => {
    expect(() => expandSqlMarkers("sqlite", "/*@nope*/", "a.sql")).toThrow(
      "a.sql: /*@nope*/: unknown marker",
    );
    expect(() => expandSqlMarkers("postgres", "/*@sharedValues state = 1*/", "a.sql")).toThrow(
      "names no shared column",
    );
    expect(() => expandSqlMarkers("postgres", "/*@param result*/", "a.sql")).toThrow("not a NewJob field");
    expect(() => expandSqlMarkers("sqlite", "/*@sharedValues attempt = 0; attempt = 1*/", "a.sql")).toThrow(
      "attempt is given twice",
    );
    expect(() => expandLuaMarkers("--@nope\n", "a.lua")).toThrow("a.lua: --@nope: unknown marker");
  });
});

describe("the statements that move a job between the two tables", () => {
  const columnsOf = (fields: readonly JobField[]) => fields.map((f) => f.column);
  const shared = SHARED_FIELDS.map((f) => f.column);
  const doneColumns = JOB_FIELDS.filter((f) => f.done).map((f) => f.column);
  const stores = {
    sqlite: { sql: SQLITE_SQL, insert: INSERT_COLUMNS },
    postgres: {
      sql: renderStatements(postgresStatements, sqlFragments("s", "c")) as Record<string, string>,
      insert: columnsOf(INSERT_FIELDS),
    },
  };

  /** The items of a list up to its end (an unmatched `)` or a top-level FROM), split at top-level commas. */
  function topLevelItems(text: string): string[] {
    const out: string[] = [];
    let depth = 0;
    let quoted = false;
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const ch = text[i]!;
      if (ch === "'") quoted = !quoted;
      if (quoted) continue;
      if (ch === "(") depth++;
      else if (ch === ")" && depth-- === 0) return [...out, text.slice(start, i).trim()];
      else if (ch === "," && depth === 0) {
        out.push(text.slice(start, i).trim());
        start = i + 1;
      } else if (depth === 0 && /^\sFROM\s/.test(text.slice(i, i + 6))) {
        return [...out, text.slice(start, i).trim()];
      }
    }
    throw new Error(`no end of list in ${text}`);
  }

  /**
   * Every INSERT … SELECT into a job table but the enqueue's (which inserts a NewJob's columns):
   * the table, its columns and the values the SELECT gives them.
   */
  function moves({ sql, insert }: { sql: Readonly<Record<string, string>>; insert: readonly string[] }) {
    const found: Array<{ name: string; table: string; columns: string[]; values: string[] }> = [];
    for (const [name, text] of Object.entries(sql)) {
      for (const m of squash(text).matchAll(/INSERT INTO (\S*errand_job(?:_done)?) \(([^)]*)\) SELECT /g)) {
        const columns = m[2]!.split(",").map((c) => c.trim());
        if (columns.slice(0, insert.length).join() === insert.join()) continue;
        const values = topLevelItems(squash(text).slice(m.index + m[0].length));
        found.push({ name, table: m[1]!.replace(/^"s"\./, ""), columns, values });
      }
    }
    return found;
  }

  it("are the statements written with {{sharedColumns}}", () => {
    expect(moves(stores.sqlite).map((m) => m.name)).toEqual([
      "moveToDone",
      "completeMove",
      "completeMoveLeaf",
      "completeLeaves",
      "dependencyCancel",
      "failKill",
      "replay",
      "replayExpired",
      "retryReinsert",
    ]);
    expect(moves(stores.postgres).map((m) => m.name)).toEqual([
      "cancel",
      "completeMany",
      "completeLeaves",
      "cancelDependents",
      "expireKeyHolders",
      "expirePending",
      "failMany",
      "replay",
      "replay",
      "retry",
    ]);
  });

  it("copy the table's shared fields, one value each, and set only the columns one table has besides", () => {
    for (const [store, statements] of Object.entries(stores)) {
      for (const { name, table, columns, values } of moves(statements)) {
        const where = `${store} ${name}`;
        expect(columns.slice(0, shared.length), where).toEqual(shared);
        const rest = columns.slice(shared.length);
        expect(rest[0], where).toBe("state");
        expect(
          rest.filter((c) => shared.includes(c)),
          where,
        ).toEqual([]);
        // Into the done table a move sets every column it has; into the hot one, besides the
        // state, at most the dependency bookkeeping: a job moved back is held by no one.
        if (table === "errand_job_done") expect(new Set(columns), where).toEqual(new Set(doneColumns));
        else {
          expect(table, where).toBe("errand_job");
          expect(
            rest.filter((c) => c !== "state" && c !== "blocked_by" && c !== "has_dependents"),
            where,
          ).toEqual([]);
        }
        expect(values, where).toHaveLength(columns.length);
        // A value that is a bare column is that column's own: the lists are not shifted.
        values.forEach((v, i) => {
          if (shared.includes(v)) expect(v, where).toBe(columns[i]);
        });
      }
    }
  });
});

describe("the Redis codec against the table", () => {
  /** A record as a job hash reply, every field written (none left to its default). */
  function encode(r: JobRecord): string[] {
    const reply = [r.id];
    for (const f of JOB_FIELDS) {
      if (f.name === "id") continue;
      const value = r[f.name];
      if (value === null) continue;
      const text =
        f.name === "state"
          ? "a"
          : f.name === "delivery"
            ? value === "at_most_once"
              ? "1"
              : ""
            : f.name === "backoff"
              ? packBackoff(String(value))
              : String(value);
      reply.push(HASH_FIELDS.get(f.name as Exclude<keyof JobRecord, "id">)!, text);
    }
    return reply;
  }

  it("names every field but the id in the hash, each once", () => {
    expect([...HASH_FIELDS.keys()]).toEqual(JOB_FIELD_NAMES.filter((n) => n !== "id"));
    expect(new Set(HASH_FIELDS.values()).size).toBe(HASH_FIELDS.size);
  });

  it("decodes every field from its hash name", () => {
    expect(decodeJob(encode(record))).toEqual(record);
  });

  it("gives a field left out of the hash the table's initial value (runAt: createdAt)", () => {
    // A job enqueued with nothing but its type and payload: every other field at its initial value.
    const n = Object.fromEntries(
      JOB_FIELDS.filter((f) => f.newJob).map((f) => [
        f.name,
        f.initial === undefined ? newJob[f.name as keyof NewJob] : f.initial === "now" ? NOW : f.initial,
      ]),
    ) as unknown as NewJob;
    const minimal = decodeJob([n.id, "t", n.type, "q", n.queue, "p", n.payload, "c", String(NOW)]);
    expect(minimal).toEqual(insertedRecord(n, NOW));
    expect(minimal.maxAttempts).toBe(5);
  });

  it("takes a NewJob's fields as script arguments in the table's order", () => {
    const args: Array<string | number> = [];
    pushNewJob(args, newJob);
    expect(args).toHaveLength(NEW_JOB_FIELDS.length);
    NEW_JOB_FIELDS.forEach((name, i) => {
      const v = newJob[name];
      if (name === "delivery") expect(args[i]).toBe("1");
      else if (name === "backoff") expect(args[i]).toBe(packBackoff(newJob.backoff));
      else expect(String(args[i])).toBe(String(v));
    });
  });

  it("gives the Lua scripts the table's defaults and argument count (npm run gen)", () => {
    const lua = scriptText("enqueueMany");
    expect(lua).toContain(`local DEFAULT_PRIORITY = "${JOB_DEFAULTS.priority}"`);
    expect(lua).toContain(`local DEFAULT_WEIGHT = "${JOB_DEFAULTS.weight}"`);
    expect(lua).toContain(`local DEFAULT_MAX_ATTEMPTS = "${JOB_DEFAULTS.maxAttempts}"`);
    expect(lua).toContain(`local JOB_FIELDS = ${NEW_JOB_FIELDS.length}`);
    // insert-job leaves a default out of the hash by these names, not by literals of its own.
    expect(lua).toContain(`put(args, "y", prio, DEFAULT_PRIORITY)`);
    expect(lua).toContain(`put(args, "w", A[i + 5], DEFAULT_WEIGHT)`);
    expect(lua).not.toMatch(/--@(?!include)/);
  });
});

describe("the HTTP API's Job schema against the table", () => {
  // The schema stays a literal (`as const`): the compile-time test in test/types derives the wire
  // types from it. This keeps it in step with the table instead.
  const job = sharedSchemas.find((s) => s.$id === "Job") as unknown as {
    required: string[];
    properties: Record<string, unknown>;
  };

  it("requires and describes exactly the public fields, in the table's order", () => {
    expect(job.required).toEqual([...PUBLIC_JOB_FIELDS]);
    expect(Object.keys(job.properties).filter((k) => k !== "duplicate")).toEqual([...PUBLIC_JOB_FIELDS]);
  });
});

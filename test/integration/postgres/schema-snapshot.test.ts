/**
 * The PostgreSQL schema a fresh install gets (tables, columns, constraints, indexes, storage
 * options, functions, triggers, the migration ledger), read back from the catalogs and compared with the snapshot
 * checked in at test/schema/postgres.sql, so an unintended schema change fails the build. After
 * an intended change (a new migration), refresh it:
 * ERRAND_UPDATE_SCHEMA=1 npx vitest run test/integration/postgres/schema-snapshot.test.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import { expect, onTestFinished, test } from "vitest";
import { migrate } from "../../../src/store/postgres/postgres-store.js";
import { dropSchema, freshSchema, PG_URL, withPg } from "../../helpers/postgres.js";

const SNAPSHOT = new URL("../../schema/postgres.sql", import.meta.url);

test("matches the checked-in PostgreSQL schema snapshot", async () => {
  const schema = freshSchema("errand_snap");
  onTestFinished(() => dropSchema(schema));
  const result = await migrate({ connectionString: PG_URL, schema });
  expect(result).toMatchObject({
    from: 0,
    applied: [
      "0001_init.sql",
      "0002_job_types_and_owner.sql",
      "0003_queue_pause.sql",
      "0004_dependencies.sql",
      "0005_keys_snooze_debounce.sql",
      "0006_rate_limits.sql",
      "0007_fair.sql",
      "0008_claim_by_type.sql",
      "0009_key_room.sql",
      "0010_job_fillfactor.sql",
      "0011_parked.sql",
      "0012_done_counts.sql",
      "0013_rate_parked_back.sql",
      "0014_rate_wake_rearm.sql",
    ],
  });

  const dump = await withPg(async (c) => {
    const q = async (text: string) => (await c.query(text, [schema])).rows;
    const columns = await q(`
      SELECT table_name AS t, column_name AS c, data_type AS type, collation_name AS coll,
        is_nullable = 'NO' AS not_null, column_default AS def
      FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`);
    const tables = await q(`
      SELECT relname AS t, coalesce(array_to_string(reloptions, ', '), '') AS options
      FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind = 'r' ORDER BY relname`);
    const constraints = await q(`
      SELECT conrelid::regclass::text AS t, conname AS name, pg_get_constraintdef(oid) AS def
      FROM pg_constraint WHERE connamespace = $1::regnamespace ORDER BY conrelid::regclass::text, conname`);
    const indexes = await q(`SELECT indexname AS name, indexdef AS def FROM pg_indexes
      WHERE schemaname = $1 ORDER BY indexname`);
    const functions = await q(`SELECT proname AS name, pg_get_functiondef(oid) AS def FROM pg_proc
      WHERE pronamespace = $1::regnamespace ORDER BY proname`);
    const triggers = await q(`SELECT tgname AS name, pg_get_triggerdef(oid) AS def FROM pg_trigger
      WHERE tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = $1::regnamespace) AND NOT tgisinternal
      ORDER BY tgname`);
    const versions = await q(
      `SELECT version, name FROM "${schema}".errand_migration WHERE $1 = $1 ORDER BY version`,
    );
    const out: string[] = [];
    for (const { t, options } of tables) {
      const cols = columns
        .filter((c) => c.t === t)
        .map(
          (c) =>
            `  ${c.c} ${c.type}${c.coll ? ` COLLATE "${c.coll}"` : ""}${c.not_null ? " NOT NULL" : ""}${
              c.def ? ` DEFAULT ${c.def}` : ""
            }`,
        );
      out.push(
        `-- table ${t}\nCREATE TABLE <schema>.${t} (\n${cols.join(",\n")}\n)${options ? ` WITH (${options})` : ""};\n`,
      );
    }
    for (const c of constraints)
      out.push(`-- constraint ${c.name}\nALTER TABLE ${c.t} ADD CONSTRAINT ${c.name} ${c.def};\n`);
    for (const i of indexes) out.push(`-- index ${i.name}\n${i.def};\n`);
    for (const f of functions) out.push(`-- function ${f.name}\n${f.def.trimEnd()};\n`);
    for (const t of triggers) out.push(`-- trigger ${t.name}\n${t.def};\n`);
    out.push(`-- migrations: ${JSON.stringify(versions)}\n`);
    return out.join("\n").replaceAll(`"${schema}"`, "<schema>").replaceAll(schema, "<schema>");
  });
  if (process.env.ERRAND_UPDATE_SCHEMA) writeFileSync(SNAPSHOT, dump);
  expect(dump).toBe(readFileSync(SNAPSHOT, "utf8"));
});

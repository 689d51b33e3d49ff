/**
 * Opening with the privileges an application role has: a role that owns its schema but may not
 * create schemas (no CREATE on the database) migrates it; and `migrate: false` on a schema newer
 * than this errand says to upgrade errand, not to migrate.
 */
import { expect, onTestFinished, test } from "vitest";
import { ErrandError } from "../../../src/errors.js";
import { LATEST_VERSION } from "../../../src/store/postgres/migrate.js";
import { migrate, PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { dropSchema, freshSchema, PG_URL, silentLogger, withPg } from "../../helpers/postgres.js";

test("a role that owns its schema but cannot create schemas migrates it", async () => {
  const schema = freshSchema("errand_own");
  const role = `${schema}_app`;
  const { rows } = await withPg(async (c) => {
    await c.query(`CREATE ROLE "${role}" LOGIN`);
    await c.query(`CREATE SCHEMA "${schema}" AUTHORIZATION "${role}"`);
    return c.query("SELECT has_database_privilege($1, current_database(), 'CREATE') AS can", [role]);
  });
  onTestFinished(async () => {
    await dropSchema(schema);
    await withPg((c) => c.query(`DROP ROLE "${role}"`));
  });
  expect(rows[0].can).toBe(false);

  const url = new URL(PG_URL);
  url.username = role;
  const store = await PostgresStore.open({ connectionString: url.toString(), schema, logger: silentLogger });
  await store.close();
  expect(await migrate({ connectionString: url.toString(), schema })).toMatchObject({
    from: LATEST_VERSION,
    to: LATEST_VERSION,
  });
  const ledger = await withPg((c) => c.query(`SELECT max(version) AS v FROM "${schema}".errand_migration`));
  expect(ledger.rows[0].v).toBe(LATEST_VERSION);
});

test("migrate: false on a schema newer than this errand says to upgrade errand", async () => {
  const schema = freshSchema("errand_new");
  onTestFinished(() => dropSchema(schema));
  await migrate({ connectionString: PG_URL, schema });
  await withPg((c) =>
    c.query(`INSERT INTO "${schema}".errand_migration VALUES (9999, '9999_future.sql', 0)`),
  );
  const opening = PostgresStore.open({
    connectionString: PG_URL,
    schema,
    migrate: false,
    logger: silentLogger,
  });
  await expect(opening).rejects.toBeInstanceOf(ErrandError);
  await expect(opening).rejects.toMatchObject({
    code: "STORE_ERROR",
    message: `schema "${schema}" is at version 9999, newer than this errand (${LATEST_VERSION}); upgrade errand`,
  });
});

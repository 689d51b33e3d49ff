import { AjvCompiler } from "@fastify/ajv-compiler";
import { describe, expect, it } from "vitest";
import { lazyValidators } from "../../src/server/lazy-validators.js";
import { routeSchemas, scheduleSchema, sharedSchemas } from "../../src/server/schemas.js";
import { SERVER_AJV } from "../../src/server/server.js";

/** The shared schemas by $id, as Fastify hands them to the validator factory. */
const externals = Object.fromEntries([...sharedSchemas, scheduleSchema].map((s) => [s.$id, s]));

/** Every request part of every route: what the server validates. */
const parts = Object.entries(routeSchemas).flatMap(([key, schema]) => {
  const [method, url] = key.split(" ") as [string, string];
  return (["body", "querystring", "params"] as const)
    .filter((part) => part in schema)
    .map((part) => ({
      key: `${key} ${part}`,
      route: { schema: (schema as Record<string, unknown>)[part] as object, method, url, httpPart: part },
    }));
});

type Validator = ((data: unknown, context?: unknown) => unknown) & { errors?: unknown };

describe("the server's request validators", () => {
  it("compile for every route, with the server's Ajv options", () => {
    // Compiled on first use in the server, so a schema Ajv refuses must fail here instead.
    const compile = AjvCompiler()(externals, SERVER_AJV);
    expect(parts.length).toBeGreaterThanOrEqual(Object.keys(routeSchemas).length);
    for (const { key, route } of parts) {
      expect(() => compile(route), key).not.toThrow();
    }
  });

  it("make no Ajv instance and compile nothing until a route is first validated", () => {
    let created = 0;
    let compiled = 0;
    const options = {
      ...SERVER_AJV,
      onCreate: (ajv: { compile: (schema: unknown) => unknown }) => {
        created++;
        const compile = ajv.compile.bind(ajv);
        ajv.compile = (schema) => {
          compiled++;
          return compile(schema);
        };
      },
    };
    const compile = lazyValidators()(externals, options);
    const validators = new Map(parts.map(({ key, route }) => [key, compile(route) as Validator]));
    expect(created).toBe(0);

    const lease = validators.get("POST /v1/lease body")!;
    expect(lease({ limit: 5 })).toBe(true);
    expect(lease({ limit: "5" })).toBe(false);
    expect(created).toBe(1);
    expect(compiled).toBe(1);

    const enqueue = validators.get("PUT /v1/jobs/:id body")!;
    expect(enqueue({ type: "email", payload: {} })).toBe(true);
    expect(created).toBe(1);
    expect(compiled).toBe(2);
  });

  it("answer as the eagerly compiled ones do, errors included", () => {
    const eager = AjvCompiler()(externals, SERVER_AJV);
    const lazy = lazyValidators()(externals, SERVER_AJV);
    const samples: Record<string, unknown[]> = {
      "PUT /v1/jobs/:id body": [
        { type: "email", payload: { to: "a@example.com" }, priority: 3 },
        { type: "email", payload: {}, priority: "high" },
        { type: "email", payload: {}, unknown: 1 },
        null,
      ],
      "POST /v1/lease body": [{ limit: 10, waitMs: 1000 }, { limit: -1 }, { limit: 10, extra: true }],
      "GET /v1/jobs querystring": [{ state: "pending" }, { state: "nope" }, {}],
    };
    for (const [key, values] of Object.entries(samples)) {
      const { route } = parts.find((p) => p.key === key)!;
      const a = eager(route) as Validator;
      const b = lazy(route) as Validator;
      for (const value of values) {
        const expected = a(value);
        expect(b(value), `${key} ${JSON.stringify(value)}`).toBe(expected);
        expect(b.errors, `${key} ${JSON.stringify(value)}`).toEqual(a.errors);
      }
    }
  });
});

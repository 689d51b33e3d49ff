import { describe, expect, it } from "vitest";
import { routeSchemas } from "../../src/server/schemas.js";
import { selectedBackends } from "../conformance/backend.js";
import { startServer } from "./harness.js";

const toOpenApiPath = (url: string) => url.replace(/:(\w+)/g, "{$1}");

describe("the OpenAPI document", () => {
  it("describes exactly the routes the server validates, with the same schemas", async () => {
    const h = await startServer(selectedBackends()[0]!);
    const { status, body: doc } = await h.http("GET", "/openapi.json");
    expect(status).toBe(200);
    expect(doc.openapi).toBe("3.1.0");

    const documented = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const declared = new Set(
      Object.keys(routeSchemas).map((k) => {
        const [m, u] = k.split(" ") as [string, string];
        return `${m} ${toOpenApiPath(u)}`;
      }),
    );
    expect([...documented].sort()).toEqual([...declared].sort());

    for (const [key, schema] of Object.entries(routeSchemas)) {
      const [method, url] = key.split(" ") as [string, string];
      const op = doc.paths[toOpenApiPath(url)][method.toLowerCase()];
      expect(op.summary, key).toBe(schema.summary);
      const body = "body" in schema ? (schema.body as { properties?: object; oneOf?: unknown[] }) : undefined;
      const docBody = op.requestBody?.content?.["application/json"]?.schema;
      const changes = ["POST", "PUT", "PATCH", "DELETE"].includes(method);
      for (const status of ["414", "429", "431", "503", ...(changes ? ["413", "415"] : [])]) {
        expect(op.responses[status]?.content["application/json"].schema, `${key} ${status}`).toEqual({
          $ref: "#/components/schemas/Error",
        });
      }
      if (!body) {
        // A change without a body of its own still says JSON (the server refuses it otherwise).
        if (changes) expect(docBody, key).toEqual({ type: "object", additionalProperties: false });
        else expect(docBody, key).toBeUndefined();
        continue;
      }
      if (body.properties)
        expect(Object.keys(docBody.properties).sort(), key).toEqual(Object.keys(body.properties).sort());
      if (body.oneOf) expect(docBody.oneOf, key).toHaveLength(body.oneOf.length);
      const params =
        "params" in schema ? Object.keys((schema.params as { properties: object }).properties) : [];
      expect(
        (op.parameters ?? [])
          .filter((p: { in: string }) => p.in === "path")
          .map((p: { name: string }) => p.name),
        key,
      ).toEqual(params);
      for (const status of Object.keys(schema.response))
        expect(op.responses[status], `${key} ${status}`).toBeDefined();
    }
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(["Job", "Error", "JobType", "Schedule"]),
    );
  });

  it("takes a change with no body of its own as the document says: {} as JSON", async () => {
    const h = await startServer(selectedBackends()[0]!);
    await h.queue.enqueue("t", {}, { id: "j1" });
    const doc = (await h.http("GET", "/openapi.json")).body;
    expect(doc.paths["/v1/prune"].post.requestBody.content).toHaveProperty(["application/json"]);
    expect((await h.http("POST", "/v1/prune", { body: {} })).status).toBe(200);
    expect((await h.http("POST", "/v1/jobs/j1/cancel", { body: {} })).status).toBe(200);
    expect((await h.http("POST", "/v1/queues/default/pause", { body: {} })).status).toBe(200);
    // Without the content type, as a client that sends no body might: 415, as documented.
    const bare = await h.http("POST", "/v1/queues/default/resume", { headers: { "content-type": "" } });
    expect(bare.status).toBe(415);
  });

  it("validates requests with the documented schema: a field the document lacks is refused", async () => {
    const h = await startServer(selectedBackends()[0]!);
    const doc = (await h.http("GET", "/openapi.json")).body;
    const enqueue = doc.paths["/v1/jobs/{id}"].put.requestBody.content["application/json"].schema;
    const accepted = Object.fromEntries(
      Object.keys(enqueue.properties)
        .filter((k) => ["type", "payload", "priority"].includes(k))
        .map((k) => [k, k === "type" ? "t" : k === "priority" ? 1 : null]),
    );
    expect((await h.http("PUT", "/v1/jobs/k1", { body: accepted })).status).toBe(201);
    expect(enqueue.properties).not.toHaveProperty("color");
    expect((await h.http("PUT", "/v1/jobs/k2", { body: { ...accepted, color: "red" } })).status).toBe(400);
  });
});

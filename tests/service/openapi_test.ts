/**
 * The service's OpenAPI document (`GET /openapi.json`, src/service/openapi.ts): valid OpenAPI 3.1
 * (`@seriousme/openapi-schema-validator`), the same routes and methods the handler answers, no
 * more and no fewer, and real answers that match its schemas (ajv, JSON Schema 2020-12).
 */

import "../support/deadline.ts"; // a time limit on every test of this file
import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020.js";
import { DenoKvStore } from "../../src/stores/deno_kv/deno_kv_store.ts";
import { createHandler } from "../../src/service/mod.ts";
import { ROUTES } from "../../src/service/openapi.ts";

const TOKEN = "openapi-token-0123456789";
const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

type Doc = {
  paths: Record<string, Record<string, { requestBody?: unknown }>>;
  components: { schemas: Record<string, unknown> };
};

async function documentOf(fetch: (req: Request) => Promise<Response>): Promise<Doc> {
  const res = await fetch(new Request("http://localhost/openapi.json"));
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  return await res.json();
}

/** A request for `path` (a template) with `method`, authorised, with a body where one is due. */
function requestFor(path: string, method: string): Request {
  const url = `http://localhost${path.replace("{name}", "order")}`;
  const body = path.endsWith("/release")
    ? JSON.stringify({ first: "1", last: "1", receipts: ["AAAAAAAAAAAAAAAAAAAAAA"] })
    : path.endsWith("/step")
    ? JSON.stringify({ step: 10 })
    : path.startsWith("/v1/segments/")
    ? JSON.stringify({ count: 5 })
    : path === "/login"
    ? new URLSearchParams({ token: TOKEN }).toString()
    : undefined;
  return new Request(url, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, accept: "application/json" },
    body: method === "GET" || method === "HEAD" ? undefined : body,
  });
}

Deno.test("OpenAPI: the document is valid OpenAPI 3.1; a broken one is not", async () => {
  using store = new DenoKvStore(":memory:");
  await using service = createHandler({ store, tokens: `${TOKEN}:*`, log: () => {} });
  const doc = await documentOf(service.fetch);
  const validator = new Validator();
  const result = await validator.validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors));
  assert.equal(validator.version, "3.1");
  const broken = structuredClone(doc) as Record<string, unknown>;
  (broken.paths as Record<string, unknown>)["/healthz"] = { get: { responses: "none" } };
  assert.equal((await new Validator().validate(broken)).valid, false);
});

Deno.test("OpenAPI: every route of the handler is in the document, and only those", async (t) => {
  using store = new DenoKvStore(":memory:");
  await using service = createHandler({ store, tokens: `${TOKEN}:*`, log: () => {} });
  const doc = await documentOf(service.fetch);
  await t.step("the document's paths and methods are the router's table", () => {
    const documented = Object.entries(doc.paths).map(([path, ops]) =>
      `${path} ${Object.keys(ops).map((m) => m.toUpperCase()).sort().join(",")}`
    ).sort();
    const routed = ROUTES.map((r) => `${r.path} ${[...r.methods].sort().join(",")}`).sort();
    assert.deepEqual(documented, routed);
  });
  await t.step("each documented method is answered (not 404, not 405)", async () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) {
        const res = await service.fetch(requestFor(path, method.toUpperCase()));
        await res.body?.cancel();
        assert.ok(res.status !== 404 && res.status !== 405, `${method} ${path}: ${res.status}`);
      }
    }
  });
  await t.step("each other method is 405 with the documented methods in Allow", async () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      const allowed = Object.keys(ops).map((m) => m.toUpperCase());
      for (const method of METHODS.filter((m) => !allowed.includes(m))) {
        const res = await service.fetch(requestFor(path, method));
        await res.body?.cancel();
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.deepEqual(
          (res.headers.get("allow") ?? "").split(", ").sort(),
          [...allowed].sort(),
          `${method} ${path}`,
        );
      }
    }
  });
  await t.step("paths next to the documented ones are 404", async () => {
    for (
      const path of [
        "/v1",
        "/v1/ids",
        "/v1/ids/",
        "/v1/daily",
        "/v1/segments",
        "/v1/segments/",
        "/v1/segments/order/other",
        "/v1/segments/order/step/x",
        "/v2/ids/order",
        "/metrics/x",
        "/openapi",
        "/openapi.yaml",
        "/healthz/",
        "/login/x",
        "/index.html",
      ]
    ) {
      for (const method of ["GET", "POST"]) {
        const res = await service.fetch(requestFor(path, method));
        await res.body?.cancel();
        assert.equal(res.status, 404, `${method} ${path}`);
      }
    }
  });
});

Deno.test("OpenAPI: real answers match the document's schemas", async () => {
  using store = new DenoKvStore(":memory:");
  await using service = createHandler({ store, tokens: `${TOKEN}:*`, log: () => {} });
  const doc = await documentOf(service.fetch);
  const ajv = new Ajv2020.default({ strict: false });
  ajv.addSchema({ $id: "doc", components: doc.components });
  const check = async (req: Request, schema: string, status: number) => {
    const res = await service.fetch(req);
    assert.equal(res.status, status, `${req.method} ${req.url}`);
    const body = await res.json();
    const validate = ajv.getSchema(`doc#/components/schemas/${schema}`)!;
    assert.ok(
      validate(body),
      `${schema}: ${JSON.stringify(validate.errors)} for ${JSON.stringify(body)}`,
    );
    return body;
  };
  await check(requestFor("/v1/ids/{name}", "POST"), "IdsResponse", 200);
  await check(requestFor("/v1/daily/{name}", "POST"), "IdsResponse", 200);
  await check(requestFor("/v1/segments/{name}", "POST"), "SegmentResponse", 200);
  // A release with the receipt of its segment (a name of its own: nothing else reserves it),
  // as the document describes the request; its replay is refused, as documented.
  const segmentOf = (path: string, body: unknown) =>
    new Request(`http://localhost/v1/segments/given${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    });
  const given = await check(segmentOf("", { count: 5 }), "SegmentResponse", 200);
  const release = { first: "3", last: "5", receipts: [given.receipt] };
  const validRelease = ajv.getSchema("doc#/components/schemas/ReleaseRequest")!;
  assert.ok(validRelease(release), JSON.stringify(validRelease.errors));
  assert.ok(
    !validRelease({ first: "3", last: "5" }),
    "the schema takes a release without receipts",
  );
  await check(segmentOf("/release", release), "ReleaseResponse", 200);
  const replay = await check(segmentOf("/release", release), "ServiceError", 409);
  assert.equal(replay.error.code, "release_refused");
  await check(requestFor("/v1/segments/{name}/step", "PUT"), "StepBody", 200);
  await check(requestFor("/v1/segments/{name}/step", "GET"), "StepBody", 200);
  await check(
    new Request("http://localhost/v1/ids/order?count=0", {
      headers: { authorization: `Bearer ${TOKEN}` },
    }),
    "ServiceError",
    400,
  );
  await check(
    new Request("http://localhost/v1/ids/order", { method: "POST" }),
    "ServiceError",
    401,
  );
  await check(new Request("http://localhost/nope"), "ServiceError", 404);
  const segment = new Request("http://localhost/v1/segments/order", {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ count: 0 }),
  });
  await check(segment, "ServiceError", 400);
});

Deno.test("OpenAPI: each operation documents the guards' 403, 405, 415 and 429 where they happen", async (t) => {
  using store = new DenoKvStore(":memory:");
  type Op = { responses: Record<string, unknown> };
  const ops = async (fetch: (req: Request) => Promise<Response>) =>
    Object.entries((await documentOf(fetch)).paths as Record<string, Record<string, Op>>)
      .flatMap(([path, byMethod]) =>
        Object.entries(byMethod).map(([method, op]) => ({ path, method: method.toUpperCase(), op }))
      );
  const probe = (path: string) => path === "/healthz" || path === "/readyz";
  /** `res`'s status, which must be among `op`'s documented answers. */
  const documented = async (res: Response, op: Op, what: string) => {
    await res.body?.cancel();
    assert.ok(String(res.status) in op.responses, `${what}: ${res.status} is not documented`);
    return res.status;
  };
  /** `requestFor` with its URL's host and the headers replaced. */
  const variant = (path: string, method: string, host: string, headers: HeadersInit) => {
    const base = requestFor(path, method);
    return new Request(base.url.replace("//localhost", `//${host}`), {
      method,
      headers,
      body: method === "GET" || method === "HEAD" ? undefined : base.body,
    });
  };

  await t.step("without tokens: another host 403, a GET of IDs 405, text/plain 415", async () => {
    await using open = createHandler({ store, auth: "none", log: () => {} });
    for (const { path, method, op } of await ops(open.fetch)) {
      const what = `${method} ${path}`;
      const evil = await open.fetch(variant(path, method, "evil.example", {}));
      assert.equal(await documented(evil, op, `${what}, another host`), probe(path) ? 200 : 403);
      const counts = /^\/v1\/(ids|daily|segments)\//.test(path) &&
        !(method === "GET" && path.endsWith("/step"));
      if (!counts) continue;
      const typed = await open.fetch(
        variant(path, method, "localhost", { "content-type": "text/plain" }),
      );
      assert.equal(
        await documented(typed, op, `${what}, text/plain`),
        method === "GET" ? 405 : 415,
      );
    }
  });

  await t.step(
    "a peer past its failed authentications: 429 on every route but the probes",
    async () => {
      await using service = createHandler({
        store,
        tokens: `${TOKEN}:*`,
        authFailuresPerMinute: 1,
        log: () => {},
      });
      const info = { remoteAddr: { transport: "tcp" as const, hostname: "10.0.0.9", port: 1 } };
      const wrong = new Request("http://localhost/metrics", {
        headers: { authorization: "Bearer wrong-token-0123456789" },
      });
      assert.equal((await service.fetch(wrong, info)).status, 401);
      for (const { path, method, op } of await ops(service.fetch)) {
        const res = await service.fetch(requestFor(path, method), info);
        assert.equal(await documented(res, op, `${method} ${path}`), probe(path) ? 200 : 429);
      }
    },
  );
});

import { readFileSync } from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { Validator } from "@seriousme/openapi-schema-validator"
import { OpenApi } from "effect/http-api"
import { httpErrors } from "../src/api/ErrorEnvelope.ts"
import { MerchantApi } from "../src/api/MerchantApi.ts"
import { OperatorApi } from "../src/api/OperatorApi.ts"
import * as ApiError from "../src/errors/ApiError.ts"

const spec = OpenApi.fromApi(MerchantApi)

const authentication = [
  "unauthenticated",
  "invalid_api_key",
  "application_disabled",
  "application_pending_review",
  "application_suspended",
  "ip_not_allowed",
  "rate_limited"
]

// Decisions §1: every operation, its success status, and every code it may answer with.
const operations: ReadonlyArray<{
  readonly method: "get" | "post"
  readonly path: string
  readonly success: string
  readonly codes: ReadonlyArray<string>
}> = [
  {
    method: "post",
    path: "/api/v1/payments",
    success: "201",
    codes: [
      ...authentication,
      "http_error",
      "validation_failed",
      "method_required",
      "method_not_enabled",
      "amount_below_minimum",
      "amount_above_maximum",
      "return_url_not_allowed",
      "order_reference_already_paid",
      "idempotency_key_reused",
      "idempotency_request_in_progress",
      "provider_error",
      "server_error"
    ]
  },
  {
    method: "get",
    path: "/api/v1/payments/{id}",
    success: "200",
    codes: [...authentication, "not_found", "server_error"]
  },
  {
    method: "get",
    path: "/api/v1/payments",
    success: "200",
    codes: [...authentication, "validation_failed", "server_error"]
  },
  // Decisions §12: the events the webhooks carry, read back.
  {
    method: "get",
    path: "/api/v1/events",
    success: "200",
    codes: [...authentication, "validation_failed", "server_error"]
  },
  {
    method: "get",
    path: "/api/v1/events/{id}",
    success: "200",
    codes: [...authentication, "not_found", "server_error"]
  },
  {
    method: "post",
    path: "/api/v1/payments/{id}/cancel",
    success: "200",
    codes: [
      ...authentication,
      "http_error",
      "validation_failed",
      "not_found",
      "payment_not_cancellable",
      "payment_busy",
      // A live payment's provider did not close it (decisions §10).
      "provider_error",
      "server_error"
    ]
  },
  {
    method: "post",
    path: "/api/v1/payments/{id}/refunds",
    success: "201",
    codes: [
      ...authentication,
      "http_error",
      "not_found",
      "refunds_processed_manually",
      "payment_not_refundable",
      "refund_amount_exceeds_refundable",
      "payment_busy",
      "idempotency_key_reused",
      "idempotency_request_in_progress",
      "validation_failed",
      "server_error"
    ]
  },
  {
    method: "post",
    path: "/api/v1/test/payments/{id}/simulate",
    success: "200",
    codes: [
      ...authentication,
      "http_error",
      "validation_failed",
      "not_found",
      "payment_not_pending",
      "payment_busy",
      "server_error"
    ]
  },
  { method: "get", path: "/healthz", success: "200", codes: ["server_error"] }
]

// --- reading the document -----------------------------------------------------------------------------------------

type Json = { readonly [key: string]: unknown }

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null

const at = (value: unknown, ...path: ReadonlyArray<string | number>): unknown =>
  path.reduce<unknown>((current, key) => (isObject(current) ? current[key] : undefined), value)

const document: Json = JSON.parse(JSON.stringify(spec))

const operation = (method: string, path: string): Json => {
  const found = at(document, "paths", path, method)
  if (!isObject(found)) throw new Error(`${method.toUpperCase()} ${path} is not in the document`)
  return found
}

const resolve = (schema: unknown): unknown => {
  const ref = at(schema, "$ref")
  return typeof ref === "string" ? at(document, ...ref.replace("#/", "").split("/")) : schema
}

/** The error codes a response's JSON content declares, through `$ref` and `anyOf`. */
const codesOf = (schema: unknown): ReadonlyArray<string> => {
  const resolved = resolve(schema)
  const anyOf = at(resolved, "anyOf")
  if (Array.isArray(anyOf)) return anyOf.flatMap(codesOf)
  const codes = at(resolved, "properties", "error", "properties", "code", "enum")
  return Array.isArray(codes) ? codes.filter((code): code is string => typeof code === "string") : []
}

/** [status, code] of every error response of an operation. */
const errorsOf = (op: Json): ReadonlyArray<readonly [number, string]> =>
  Object.entries(isObject(op.responses) ? op.responses : {})
    .filter(([status]) => Number(status) >= 400)
    .flatMap(([status, response]) =>
      codesOf(at(response, "content", "application/json", "schema")).map((code) => [Number(status), code] as const)
    )

const parameter = (op: Json, name: string): unknown =>
  (Array.isArray(op.parameters) ? op.parameters : []).find((p) => at(p, "name") === name)

// --- the tests ----------------------------------------------------------------------------------------------------

describe("OpenAPI document of MerchantApi", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    assert.strictEqual(spec.openapi, "3.1.0")
    const result = await new Validator().validate(JSON.parse(JSON.stringify(spec)))
    assert.deepStrictEqual(result.errors, undefined)
    assert.isTrue(result.valid)
    assert.strictEqual(spec.info.title, "Kassa merchant API")
    assert.isString(spec.info.version)
  })

  it("has exactly the operations of decisions §1 and the health check", () => {
    const listed = Object.entries(spec.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method} ${path}`)
    )
    assert.sameMembers(
      listed,
      operations.map(({ method, path }) => `${method} ${path}`)
    )
  })

  for (const { method, path, success, codes } of operations) {
    describe(`${method.toUpperCase()} ${path}`, () => {
      it(`answers ${success} and documents the success body`, () => {
        const op = operation(method, path)
        const successes = Object.keys(isObject(op.responses) ? op.responses : {}).filter((status) => +status < 400)
        assert.deepStrictEqual(successes, [success])
        assert.isDefined(at(op, "responses", success, "content", "application/json", "schema"))
      })

      it("lists every error code it may answer with", () => {
        const errors = errorsOf(operation(method, path))
        // Every path answers another method with 405 `http_error` (OpenApiDocument).
        assert.sameMembers([...new Set(errors.map(([, code]) => code))], [...new Set([...codes, "http_error"])])
      })
    })
  }

  it("takes every error response from the catalogue: each code at its one status, with its description", () => {
    const documented = new Set<string>()
    for (const item of Object.values(isObject(document.paths) ? document.paths : {})) {
      for (const op of Object.values(isObject(item) ? item : {})) {
        if (!isObject(op)) continue
        for (const [status, code] of errorsOf(op)) {
          const row = ApiError.byCode[code as ApiError.ErrorCode]
          assert.isDefined(row, `${code} is not in the catalogue`)
          const statuses = code === "http_error" ? Object.keys(httpErrors).map(Number) : [row.status]
          assert.include(statuses, status, code)
          // http_error says what each of its statuses means; its component carries the catalogue's description.
          const description = code === "http_error" ? "" : row.description
          assert.include(String(at(op, "responses", String(status), "description")), `\`${code}\`: ${description}`)
          documented.add(code)
        }
      }
    }
    for (const row of Object.values(ApiError.catalogue)) {
      const component = at(document, "components", "schemas", row.error.identifier.replace(/(?<!Error)$/, "Error"))
      assert.strictEqual(at(component, "description"), row.description, row.code)
    }
    assert.sameMembers([...documented], Object.keys(ApiError.byCode))
  })

  it("answers http_error for malformed bodies only where there is a body", () => {
    assert.sameMembers(
      errorsOf(operation("post", "/api/v1/payments"))
        .filter(([, code]) => code === "http_error")
        .map(([status]) => status),
      [400, 405, 413, 415]
    )
    assert.isUndefined(at(operation("get", "/api/v1/payments"), "responses", "415"))
  })

  it("documents bearer authentication on every /api/v1 operation and none on /healthz", () => {
    const scheme = at(document, "components", "securitySchemes", "bearer")
    assert.strictEqual(at(scheme, "type"), "http")
    assert.strictEqual(String(at(scheme, "scheme")).toLowerCase(), "bearer")
    assert.include(String(at(scheme, "description")), "pk_test_")
    for (const { method, path } of operations) {
      const security = operation(method, path).security
      assert.deepStrictEqual(security, path === "/healthz" ? [] : [{ bearer: [] }], path)
    }
  })

  it("documents the optional Idempotency-Key header on create and refund, Kassa-Simulate on create", () => {
    for (const path of ["/api/v1/payments", "/api/v1/payments/{id}/refunds"]) {
      const header = parameter(operation("post", path), "idempotency-key")
      assert.strictEqual(at(header, "in"), "header", path)
      assert.strictEqual(at(header, "required"), false, path)
      assert.strictEqual(at(header, "schema", "maxLength"), 255, path)
    }
    const simulate = parameter(operation("post", "/api/v1/payments"), "kassa-simulate")
    assert.strictEqual(at(simulate, "required"), false)
    assert.deepStrictEqual(at(simulate, "schema", "enum"), ["provider_error"])
  })

  it("documents Location on 201 created and Retry-After on 429", () => {
    const create = operation("post", "/api/v1/payments")
    assert.strictEqual(at(create, "responses", "201", "headers", "location", "required"), true)
    assert.strictEqual(at(create, "responses", "429", "headers", "retry-after", "required"), true)
  })

  it("documents the request bodies, refusing unknown fields, and the list query", () => {
    const createBody = resolve(
      at(operation("post", "/api/v1/payments"), "requestBody", "content", "application/json", "schema")
    )
    assert.strictEqual(at(createBody, "additionalProperties"), false)
    assert.deepStrictEqual(at(createBody, "required"), ["amount", "order_reference"])
    assert.strictEqual(at(operation("post", "/api/v1/payments/{id}/cancel"), "requestBody", "required"), false)
    assert.strictEqual(at(operation("post", "/api/v1/payments/{id}/refunds"), "requestBody", "required"), false)
    const list = operation("get", "/api/v1/payments")
    for (const name of ["limit", "starting_after", "status", "order_reference"]) {
      assert.strictEqual(at(parameter(list, name), "in"), "query", name)
    }
    const events = operation("get", "/api/v1/events")
    for (const name of ["limit", "starting_after", "type", "payment_id", "created_gte", "created_lt"]) {
      assert.strictEqual(at(parameter(events, name), "in"), "query", name)
    }
  })

  it("is what packages/core/openapi.json holds (regenerate with `pnpm --filter @kassa/core run openapi`)", () => {
    const committed = readFileSync(new URL("../openapi.json", import.meta.url), "utf8")
    assert.strictEqual(committed, `${JSON.stringify(spec, null, 2)}\n`)
  })

  it("the operator API's is what packages/core/openapi-operator.json holds (the same command writes it)", () => {
    const committed = readFileSync(new URL("../openapi-operator.json", import.meta.url), "utf8")
    assert.strictEqual(committed, `${JSON.stringify(OpenApi.fromApi(OperatorApi), null, 2)}\n`)
  })
})

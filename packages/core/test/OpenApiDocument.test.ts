import { assert, describe, it } from "@effect/vitest"
import { Validator } from "@seriousme/openapi-schema-validator"
import { Schema, SchemaAST } from "effect"
import { OpenApi } from "effect/http-api"
import * as ErrorEnvelope from "../src/api/ErrorEnvelope.ts"
import * as EventsApi from "../src/api/EventsApi.ts"
import { MerchantApi } from "../src/api/MerchantApi.ts"
import { OperatorApi } from "../src/api/OperatorApi.ts"
import * as OperatorSchemas from "../src/api/OperatorSchemas.ts"
import * as OperatorSettings from "../src/api/OperatorSettings.ts"
import * as PaymentsApi from "../src/api/PaymentsApi.ts"
import * as Application from "../src/domain/Application.ts"
import * as Payment from "../src/domain/Payment.ts"
import * as WebhookEvent from "../src/domain/WebhookEvent.ts"
import * as PaymentRequests from "../src/payments/PaymentRequests.ts"

type Json = { readonly [key: string]: unknown }
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null
const at = (value: unknown, ...path: ReadonlyArray<string | number>): unknown =>
  path.reduce<unknown>((current, key) => (isObject(current) ? current[key] : undefined), value)

const merchant: Json = JSON.parse(JSON.stringify(OpenApi.fromApi(MerchantApi)))
const operator: Json = JSON.parse(JSON.stringify(OpenApi.fromApi(OperatorApi)))
const documents = { merchant, operator } as const

interface Operation {
  readonly method: string
  readonly path: string
  readonly op: Json
}
const operationsOf = (document: Json): ReadonlyArray<Operation> =>
  Object.entries(isObject(document.paths) ? document.paths : {}).flatMap(([path, item]) =>
    Object.entries(isObject(item) ? item : {}).flatMap(([method, op]) => (isObject(op) ? [{ method, path, op }] : []))
  )
const responsesOf = (op: Json): ReadonlyArray<readonly [string, Json]> =>
  Object.entries(isObject(op.responses) ? op.responses : {}).flatMap(([status, r]) =>
    isObject(r) ? [[status, r] as const] : []
  )
const headerOf = (response: Json, name: string) => at(response, "headers", name)

/** Every schema the contracts export, by the identifier OpenAPI names its component with. */
const byIdentifier = new Map<string, Schema.Top>()
for (const module of [Payment, WebhookEvent, Application, PaymentRequests, PaymentsApi, EventsApi, OperatorSchemas]) {
  for (const value of Object.values(module)) {
    if (!Schema.isSchema(value)) continue
    const identifier = SchemaAST.resolveIdentifier(value.ast)
    if (identifier !== undefined && !byIdentifier.has(identifier)) byIdentifier.set(identifier, value)
  }
}
byIdentifier.set("CreateApplicationBody", OperatorSettings.CreateApplicationBody)
byIdentifier.set("UpdateApplicationBody", OperatorSettings.UpdateApplicationBody)
for (const [tag, schema] of Object.entries(ErrorEnvelope.byTag)) {
  // RateLimited decodes from its body and its `Retry-After` header together; its body is checked by lint only.
  if (tag !== "RateLimited") byIdentifier.set(tag.endsWith("Error") ? tag : `${tag}Error`, schema)
}
byIdentifier.set("HttpError", ErrorEnvelope.BadRequest)

/** The component names a media type's schema refers to, directly or as `anyOf` branches. */
const refsOf = (schema: unknown): ReadonlyArray<string> => {
  const ref = at(schema, "$ref")
  if (typeof ref === "string") return [ref.replace("#/components/schemas/", "")]
  const anyOf = at(schema, "anyOf")
  return Array.isArray(anyOf) ? anyOf.flatMap(refsOf) : []
}

describe("OpenAPI documents: what OpenApiDocument adds", () => {
  it("the operator document is valid OpenAPI 3.1", async () => {
    const result = await new Validator().validate(operator)
    assert.deepStrictEqual(result.errors, undefined)
    assert.isTrue(result.valid)
  })

  for (const [name, document] of Object.entries(documents)) {
    describe(name, () => {
      it("names the server, with its origin a variable, and the licence", () => {
        assert.strictEqual(at(document, "servers", 0, "url"), "{origin}")
        assert.strictEqual(at(document, "servers", 0, "variables", "origin", "default"), "http://localhost:4000")
        assert.strictEqual(at(document, "info", "license", "identifier"), "MIT")
      })

      it("gives every operation the bearer scheme (the health check: none), 405 with Allow, Request-Id", () => {
        for (const { method, path, op } of operationsOf(document)) {
          const label = `${method} ${path}`
          assert.deepStrictEqual(op.security, path === "/healthz" ? [] : [{ bearer: [] }], label)
          const notAllowed = at(op, "responses", "405")
          assert.strictEqual(at(notAllowed, "headers", "allow", "required"), true, label)
          assert.strictEqual(
            at(notAllowed, "content", "application/json", "schema", "$ref"),
            "#/components/schemas/HttpError"
          )
          for (const [status, response] of responsesOf(op)) {
            assert.strictEqual(at(headerOf(response, "request-id"), "required"), true, `${label} ${status}`)
          }
        }
      })

      it("has an example for every request body and every response body", () => {
        for (const { method, path, op } of operationsOf(document)) {
          const bodies = [
            ...Object.values(
              isObject(at(op, "requestBody", "content")) ? (at(op, "requestBody", "content") as Json) : {}
            ),
            ...responsesOf(op).flatMap(([, r]) => Object.values(isObject(r.content) ? r.content : {}))
          ]
          for (const media of bodies) assert.notStrictEqual(at(media, "example"), undefined, `${method} ${path}`)
        }
      })

      it("has examples the contracts' own schemas decode", () => {
        const unchecked = new Set<string>()
        for (const { method, path, op } of operationsOf(document)) {
          const bodies = [
            ...Object.values(
              isObject(at(op, "requestBody", "content")) ? (at(op, "requestBody", "content") as Json) : {}
            ),
            ...responsesOf(op).flatMap(([, r]) => Object.values(isObject(r.content) ? r.content : {}))
          ]
          for (const media of bodies) {
            const refs = refsOf(at(media, "schema"))
            const schemas = refs.flatMap((ref) => byIdentifier.get(ref) ?? [])
            if (schemas.length === 0) {
              for (const ref of refs) unchecked.add(ref)
              continue
            }
            const decodes = schemas.some(
              (schema) =>
                Schema.decodeUnknownExit(schema as Schema.Codec<unknown, unknown>)(at(media, "example"))._tag ===
                "Success"
            )
            assert.isTrue(decodes, `${method} ${path}: ${refs.join(" | ")} ${JSON.stringify(at(media, "example"))}`)
          }
        }
        assert.sameMembers([...unchecked], name === "merchant" ? ["RateLimitedError", "Health"] : ["RateLimitedError"])
      })

      it("gives every named schema an example, which its Effect schema decodes", () => {
        const schemas = at(document, "components", "schemas")
        for (const [component, schema] of Object.entries(isObject(schemas) ? schemas : {})) {
          const example = at(schema, "examples", 0)
          assert.notStrictEqual(example, undefined, component)
          const codec = byIdentifier.get(component)
          if (codec === undefined) continue
          const decoded = Schema.decodeUnknownExit(codec as Schema.Codec<unknown, unknown>)(example)
          assert.strictEqual(decoded._tag, "Success", `${component} ${JSON.stringify(example)}`)
        }
      })

      it("sets format on every timestamp, UUID, URL and e-mail field", () => {
        const schemas = at(document, "components", "schemas")
        const formatOf = (schema: unknown): unknown =>
          at(schema, "format") ?? (Array.isArray(at(schema, "anyOf")) ? at(schema, "anyOf", 0, "format") : undefined)
        const expected: ReadonlyArray<readonly [string, string, string | undefined]> =
          name === "merchant"
            ? [
                ["Payment", "id", "uuid"],
                ["Payment", "created_at", "date-time"],
                ["Payment", "paid_at", "date-time"],
                ["Payment", "checkout_url", "uri"],
                ["Payment", "return_url", "uri"],
                ["CreatePaymentBody", "return_url", "uri"],
                ["WebhookEvent", "id", undefined],
                ["WebhookEvent", "created_at", "date-time"]
              ]
            : [
                ["User", "email", "email"],
                ["User", "id", "uuid"],
                ["Application", "created_at", "date-time"],
                ["Application", "webhook_url", "uri"],
                ["Delivery", "event_id", undefined],
                ["Delivery", "next_attempt_at", "date-time"]
              ]
        for (const [component, property, format] of expected) {
          assert.strictEqual(
            formatOf(at(schemas, component, "properties", property)),
            format,
            `${component}.${property}`
          )
        }
        for (const { path, op } of operationsOf(document)) {
          const id = (Array.isArray(op.parameters) ? op.parameters : []).find((p) => at(p, "name") === "id")
          if (id !== undefined) {
            assert.strictEqual(at(id, "schema", "format"), path.includes("/events/") ? undefined : "uuid", path)
          }
        }
      })
    })
  }

  it("sends RateLimit-* on the merchant API's counted answers, Retry-After on 429, Idempotent-Replayed on replays", () => {
    for (const { method, path, op } of operationsOf(merchant)) {
      const label = `${method} ${path}`
      const idempotent = (Array.isArray(op.parameters) ? op.parameters : []).some(
        (p) => at(p, "name") === "idempotency-key"
      )
      for (const [status, response] of responsesOf(op)) {
        const counted = path !== "/healthz" && status !== "401" && status !== "403" && status !== "405"
        assert.strictEqual(headerOf(response, "ratelimit-remaining") !== undefined, counted, `${label} ${status}`)
        if (status === "429") assert.strictEqual(at(headerOf(response, "retry-after"), "required"), true, label)
        assert.strictEqual(
          headerOf(response, "idempotent-replayed") !== undefined,
          idempotent && Number(status) < 300,
          `${label} ${status}`
        )
      }
    }
    const create = at(merchant, "paths", "/api/v1/payments", "post", "responses")
    assert.isDefined(at(create, "409", "headers", "retry-after"))
    assert.isDefined(at(create, "500", "headers", "retry-after"))
    for (const { op } of operationsOf(operator)) {
      for (const [, response] of responsesOf(op)) assert.isUndefined(headerOf(response, "ratelimit-limit"))
    }
  })

  it("has SDK and curl snippets for creating, fetching, listing, cancelling and refunding payments, listing events", () => {
    for (const [method, path] of [
      ["post", "/api/v1/payments"],
      ["get", "/api/v1/payments/{id}"],
      ["get", "/api/v1/payments"],
      ["post", "/api/v1/payments/{id}/cancel"],
      ["post", "/api/v1/payments/{id}/refunds"],
      ["get", "/api/v1/events"]
    ] as const) {
      const samples = at(merchant, "paths", path, method, "x-codeSamples")
      assert.isArray(samples, path)
      const sources = (samples as ReadonlyArray<Json>).map((sample) => String(sample.source))
      assert.isTrue(
        sources.some((s) => s.includes('from "@kassa/client"') && s.includes("kassa.")),
        path
      )
      assert.isTrue(
        sources.some((s) => s.startsWith(`curl -X ${method.toUpperCase()}`) && s.includes("Bearer $KASSA_API_KEY")),
        path
      )
    }
  })
})

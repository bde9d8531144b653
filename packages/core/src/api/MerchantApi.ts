/**
 * The merchant API: one definition from which the server's routes, the typed client and `/openapi.json` derive.
 *
 * - Every `/api/v1` endpoint runs {@link Authentication} (outermost, so authentication is checked before anything
 *   about the request, decisions §5) and {@link InvalidRequest}.
 * - Request bodies are decoded with every issue reported and unknown fields refused (`PayloadParseOptions`), so a
 *   schema failure carries everything `validation_failed` needs. Query and headers report every issue but ignore
 *   unknown names (headers always include transport headers; unknown query parameters are tolerated).
 * - `GET /healthz` sits outside `/api/v1` without authentication, in its own top-level group.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "./Authentication.ts"
import { merchantCodeSamples } from "./CodeSamples.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"
import { EventsApi } from "./EventsApi.ts"
import { InvalidRequest } from "./InvalidRequest.ts"
import * as OpenApiDocument from "./OpenApiDocument.ts"
import { apiPrefix, PaymentsApi } from "./PaymentsApi.ts"
import { TestApi } from "./TestApi.ts"

/** `GET /healthz`: 200 `{"status":"ok"}` once the database answers (decisions §1). No authentication. */
export class HealthApi extends HttpApiGroup.make("health", { topLevel: true })
  .add(
    HttpApiEndpoint.get("health", "/healthz", {
      success: Schema.Struct({ status: Schema.Literal("ok") }).annotate({ identifier: "Health" }),
      error: ErrorEnvelope.ServerError
    }).annotateMerge(OpenApi.annotations({ summary: "Health check", description: "200 once the database answers." }))
  )
  .annotateMerge(OpenApi.annotations({ title: "System", description: "Operations; no API key." })) {}

/** How request bodies are decoded: every issue reported, unknown fields refused (the server's lanes decode so too). */
export const payloadParseOptions = { errors: "all", onExcessProperty: "error" } as const

/** How request headers are decoded: every issue reported. */
export const headersParseOptions = { errors: "all" } as const

/**
 * The API-level middleware errors are declared for every operation, but some cannot happen on some: the body answers
 * (400, 413, 415 `http_error`) need a request body, 404 for a malformed `{id}` needs a path parameter, and 422
 * `validation_failed` needs a body, a query or a header to validate. The document leaves those out; the typed
 * client, which decodes by status, is unaffected.
 */
const withoutImpossibleAnswers = (operation: OpenApi.OpenAPISpecOperation): OpenApi.OpenAPISpecOperation => {
  const hasBody = operation.requestBody !== undefined
  const has = (place: OpenApi.OpenAPISpecParameter["in"]) => operation.parameters.some(({ in: at }) => at === place)
  const impossible = new Set<string>([
    ...(hasBody ? [] : ["400", "413", "415"]),
    ...(has("path") ? [] : ["404"]),
    ...(hasBody || has("query") || has("header") ? [] : ["422"])
  ])
  const responses = Object.entries(operation.responses).filter(([status]) => !impossible.has(status))
  return { ...operation, responses: Object.fromEntries(responses) }
}

const methods: ReadonlyArray<OpenApi.OpenAPISpecMethodName> = ["get", "put", "post", "delete", "patch"]

const mapOperations = (
  paths: OpenApi.OpenAPISpecPaths,
  f: (operation: OpenApi.OpenAPISpecOperation) => OpenApi.OpenAPISpecOperation
): OpenApi.OpenAPISpecPaths =>
  Object.fromEntries(
    Object.entries(paths).map(([path, item]) => {
      const mapped: OpenApi.OpenAPISpecPathItem = { ...item }
      for (const method of methods) {
        const operation = item[method]
        if (operation !== undefined) mapped[method] = f(operation)
      }
      return [path, mapped]
    })
  )

const description = `Server-to-server API of Kassa: create payments, follow them, cancel and refund them, and read
back the events the webhooks carry.

Authenticate every request under \`/api/v1\` with \`Authorization: Bearer <API key>\`. A \`pk_test_\` key works in
test mode (the built-in simulator, no real money), a \`pk_live_\` key in live mode; the key decides the mode of
everything done with it. Each key may make 120 requests a minute (the application's setting); its answers say how
many are left in \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`, and beyond the limit the answer
is 429 \`rate_limited\` with \`Retry-After\` in seconds. Every answer carries a \`Request-Id\`; quote it when asking for
help.

Every error is \`{"error":{"code","message",…}}\`: branch on \`code\`, never on \`message\`. Some codes add fields
(\`fields\`, \`status\`, \`payment_id\`, \`min_amount\`, …). Besides the answers listed per operation, a known path
called with another method gets 405 \`http_error\` with an \`Allow\` header, and an unknown path 404 \`not_found\`.

Send \`Idempotency-Key\` with create and refund: a retry with the same key and body never repeats the work and gets
the first answer again, marked \`Idempotent-Replayed: true\`.`

export class MerchantApi extends HttpApi.make("kassa-merchant")
  .add(PaymentsApi)
  .add(EventsApi)
  .add(TestApi)
  .prefix(apiPrefix)
  .middleware(InvalidRequest)
  // Added last, so it wraps the other middleware and runs first.
  .middleware(Authentication)
  // Added after the prefix and the middleware, so it has neither.
  .add(HealthApi)
  .annotate(HttpApi.PayloadParseOptions, payloadParseOptions)
  .annotate(HttpApi.QueryParseOptions, { errors: "all" })
  .annotate(HttpApi.HeadersParseOptions, headersParseOptions)
  .annotateMerge(
    OpenApi.annotations({
      title: "Kassa merchant API",
      version: "1.0.0",
      description,
      servers: OpenApiDocument.servers,
      transform: (spec) =>
        OpenApiDocument.transform({ rateLimited: true, codeSamples: merchantCodeSamples })({
          ...spec,
          paths: mapOperations(spec.paths, withoutImpossibleAnswers)
        })
    })
  ) {}

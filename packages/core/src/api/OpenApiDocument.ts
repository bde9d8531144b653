/**
 * What both OpenAPI documents (merchant and operator) add to what HttpApi generates, as one `transform` each API
 * applies: the licence, `format` on timestamps, UUIDs, URLs and e-mail addresses, an example for every
 * request and response body, the headers the server's middleware adds (`Request-Id`, `RateLimit-*`,
 * `Idempotent-Replayed`, `Retry-After`), the 405 envelope every operation's path gives another method, and SDK and
 * curl snippets (`x-codeSamples`, shown by `/docs`).
 *
 * These live here, not on each schema, because they follow conventions the whole API keeps (decisions §3: every
 * `*_at` is an RFC 3339 timestamp, every `*_url` an absolute URL, ids lower-case UUIDs but events' `evt_<uuid>`), and
 * because the headers come from server middleware that no endpoint declares. Examples are derived from each schema
 * (after its `format`s), so they never drift from it; an `examples` annotation on a schema wins over the derived one.
 */
import type { OpenApi } from "effect/http-api"

type Json = unknown
type JsonObject = { [key: string]: Json }

const isObject = (value: Json): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The `format` a property has by its name (decisions §3), if any. `uuid` for ids that are not event ids. */
export const formatOf = (name: string): string | undefined => {
  if (name === "at" || name.endsWith("_at") || name === "created_gte" || name === "created_lt") return "date-time"
  if (name === "email") return "email"
  if (name === "url" || name.endsWith("_url")) return "uri"
  if (name === "id" || name === "starting_after" || /^(payment|application|key|user|delivery|refund)_id$/.test(name))
    return "uuid"
  return undefined
}

/** Whether an object schema is a webhook event, whose `id` is `evt_<uuid>`, not a UUID. */
const isEvent = (schema: JsonObject): boolean => {
  const properties = schema.properties
  return isObject(properties) && "id" in properties && "event" in properties && "data" in properties
}

/** Sets `format` on a string schema (also inside `anyOf` with `null`). */
const withFormat = (schema: Json, format: string): Json => {
  if (!isObject(schema)) return schema
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: schema.anyOf.map((s) => withFormat(s, format)) }
  return schema.type === "string" && schema.enum === undefined && schema.format === undefined
    ? { ...schema, format }
    : schema
}

/** Adds the naming conventions' `format`s to every property of every schema, recursively. */
const addFormats = (schema: Json): Json => {
  if (Array.isArray(schema)) return schema.map(addFormats)
  if (!isObject(schema)) return schema
  const out: JsonObject = {}
  for (const [key, value] of Object.entries(schema)) out[key] = addFormats(value)
  if (isObject(out.properties)) {
    const event = isEvent(schema)
    out.properties = Object.fromEntries(
      Object.entries(out.properties).map(([name, property]) => {
        const format = name === "id" && event ? undefined : formatOf(name)
        return [name, format === undefined ? property : withFormat(property, format)]
      })
    )
  }
  return out
}

// --- examples -----------------------------------------------------------------------------------------------------

const exampleUuid = "0b6c1c59-5b8e-4d1e-9a51-2f4c5d7e8a90"

const stringExample = (name: string, schema: JsonObject): string => {
  switch (schema.format) {
    case "date-time":
      return "2026-01-15T10:30:00.000Z"
    case "uuid":
      return exampleUuid
    case "uri":
      return "https://shop.example.org/orders/1042"
    case "email":
      return "jane@example.org"
  }
  const hints: Record<string, string> = {
    currency: "EUR",
    currencies: "EUR",
    methods: "ideal",
    return_url_host: "shop.example.org",
    ip_allowlist: "203.0.113.7",
    description: "Order 1042",
    reason: "damaged",
    password: "correct-horse-battery-staple",
    user_agent: "Mozilla/5.0",
    locale: "en",
    method: "ideal",
    order_reference: "order-1042",
    message: "A human-readable explanation.",
    name: "Jane Doe",
    phone: "+31612345678",
    ip: "203.0.113.7",
    id: `evt_${exampleUuid}`,
    event_id: `evt_${exampleUuid}`,
    checkout_brand_color: "#0a7c59"
  }
  const text = hints[name] ?? "text"
  const min = typeof schema.minLength === "number" ? schema.minLength : 0
  const max = typeof schema.maxLength === "number" ? schema.maxLength : Number.POSITIVE_INFINITY
  return text.padEnd(min, "x").slice(0, max)
}

/** A value valid for `schema`: its own example if it has one, else one made from its type, `format` and name. */
export const exampleOf = (schema: Json, components: JsonObject, name = "", depth = 0): Json => {
  if (!isObject(schema) || depth > 12) return null
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if (typeof schema.$ref === "string") {
    return exampleOf(components[schema.$ref.replace("#/components/schemas/", "")], components, name, depth + 1)
  }
  if ("const" in schema) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum[0]
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const options = schema[key]
    if (Array.isArray(options) && options.length > 0) {
      // Prefer a non-null branch, so a nullable field shows what it holds when set.
      const branch = options.find((option) => !(isObject(option) && option.type === "null")) ?? options[0]
      return exampleOf(branch, components, name, depth + 1)
    }
  }
  switch (schema.type) {
    case "string":
      return stringExample(name, schema)
    case "integer":
    case "number": {
      const min = typeof schema.minimum === "number" ? schema.minimum : 0
      const max = typeof schema.maximum === "number" ? schema.maximum : Number.MAX_SAFE_INTEGER
      return Math.min(Math.max(name === "amount" ? 1250 : min, min), max)
    }
    case "boolean":
      return false
    case "null":
      return null
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 1
      return Array.from({ length: Math.max(min, 1) }, () => exampleOf(schema.items, components, name, depth + 1))
    }
    case "object": {
      const properties = isObject(schema.properties) ? schema.properties : {}
      if (Object.keys(properties).length === 0) return {}
      return Object.fromEntries(
        Object.entries(properties).map(([key, value]) => [key, exampleOf(value, components, key, depth + 1)])
      )
    }
  }
  return null
}

/** Sets `example` on every JSON media type (request and response bodies) that has none. */
const withExamples = (content: Json, components: JsonObject): Json => {
  if (!isObject(content)) return content
  return Object.fromEntries(
    Object.entries(content).map(([type, media]) => [
      type,
      isObject(media) && media.example === undefined && media.examples === undefined
        ? { ...media, example: exampleOf(media.schema, components) }
        : media
    ])
  )
}

// --- headers ------------------------------------------------------------------------------------------------------

const header = (description: string, schema: JsonObject, required = true) => ({ description, required, schema })

const requestId = header("The request's id, also in the server's logs; quote it when asking for help.", {
  type: "string",
  pattern: "^req_[0-9a-f]{32}$",
  example: "req_0b6c1c595b8e4d1e9a512f4c5d7e8a90"
})

// Set once the key's request is counted, so on every later answer; a 500 may come before (the key lookup failed).
const rateLimitHeaders = (required: boolean) => ({
  "ratelimit-limit": header("Requests the key may make per window.", { type: "integer", minimum: 1 }, required),
  "ratelimit-remaining": header("Requests left in the current window.", { type: "integer", minimum: 0 }, required),
  "ratelimit-reset": header("Seconds until the window resets.", { type: "integer", minimum: 0 }, required)
})

const retryAfter = (required: boolean) =>
  header("Seconds to wait before retrying.", { type: "integer", minimum: 1 }, required)

const idempotentReplayed = header(
  "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`.",
  { type: "string", enum: ["true"] },
  false
)

/** 405 on every operation: the path exists, but not with the method called. */
const methodNotAllowed = {
  description: "`http_error`: the path exists, but not with this method; `Allow` lists the methods it takes.",
  headers: {
    allow: header("The methods the path takes.", { type: "string", example: "GET, POST" }),
    "request-id": requestId
  },
  content: {
    "application/json": {
      schema: { $ref: "#/components/schemas/HttpError" },
      example: { error: { code: "http_error", message: "Method Not Allowed" } }
    }
  }
}

// --- the transform ------------------------------------------------------------------------------------------------

export interface DocumentOptions {
  /** Whether authenticated responses carry `RateLimit-*` (the merchant API's per-key limit). */
  readonly rateLimited: boolean
  /** `x-codeSamples` by `"<method> <path>"`. */
  readonly codeSamples?: Readonly<Record<string, ReadonlyArray<{ readonly lang: string; readonly source: string }>>>
}

const methods = ["get", "put", "post", "delete", "patch"] as const

const operationWith = (
  path: string,
  method: string,
  operation: JsonObject,
  components: JsonObject,
  options: DocumentOptions
): JsonObject => {
  const parameters = Array.isArray(operation.parameters) ? operation.parameters : []
  const idempotent = parameters.some((p) => isObject(p) && p.name === "idempotency-key")
  const authenticated = Array.isArray(operation.security) && operation.security.length > 0
  const responses: JsonObject = {}
  for (const [status, response] of Object.entries(isObject(operation.responses) ? operation.responses : {})) {
    if (!isObject(response)) continue
    const code = Number(status)
    const counted = options.rateLimited && authenticated && code !== 401 && code !== 403
    const headers: JsonObject = {
      ...(isObject(response.headers) ? response.headers : {}),
      "request-id": requestId,
      ...(counted ? rateLimitHeaders(code !== 500) : {}),
      ...(code < 300 && idempotent ? { "idempotent-replayed": idempotentReplayed } : {}),
      // 429 always says when to retry; a timed-out request (500) and a request still in progress (409) may.
      ...(code === 429 ? { "retry-after": retryAfter(true) } : {}),
      ...(code === 500 || (code === 409 && idempotent) ? { "retry-after": retryAfter(false) } : {})
    }
    responses[status] = { ...response, headers, content: withExamples(response.content, components) }
  }
  responses["405"] ??= methodNotAllowed
  const requestBody = isObject(operation.requestBody)
    ? { ...operation.requestBody, content: withExamples(operation.requestBody.content, components) }
    : undefined
  const samples = options.codeSamples?.[`${method} ${path}`]
  return {
    ...operation,
    parameters: parameters.map((p) => {
      // Under /events, `{id}` and `starting_after` are event ids (`evt_<uuid>`).
      const format = isObject(p) && typeof p.name === "string" ? formatOf(p.name) : undefined
      const eventId = path.includes("/events") && isObject(p) && p.name !== "payment_id"
      return isObject(p) && format !== undefined && !eventId ? { ...p, schema: withFormat(p.schema, format) } : p
    }),
    ...(requestBody === undefined ? {} : { requestBody }),
    responses,
    ...(samples === undefined ? {} : { "x-codeSamples": samples })
  }
}

/** The `transform` of an API's OpenAPI annotations: see the module's description. */
export const transform =
  (options: DocumentOptions) =>
  (spec: Record<string, unknown>): Record<string, unknown> => {
    const components = isObject(spec.components) ? spec.components : {}
    const formatted = addFormats(isObject(components.schemas) ? components.schemas : {})
    const schemasObject = isObject(formatted) ? formatted : {}
    // Each named schema carries its example too, as a Schema `examples` annotation would: viewers (Scalar in `/docs`)
    // show a body from its schema's example rather than the media type's.
    const schemas = Object.fromEntries(
      Object.entries(schemasObject).map(([name, schema]) =>
        isObject(schema) && schema.examples === undefined
          ? [name, { ...schema, examples: [exampleOf(schema, schemasObject)] }]
          : [name, schema]
      )
    )
    const paths = addFormats(isObject(spec.paths) ? spec.paths : {})
    const mapped = Object.fromEntries(
      Object.entries(isObject(paths) ? paths : {}).map(([path, item]) => {
        const out: JsonObject = { ...(isObject(item) ? item : {}) }
        for (const method of methods) {
          const operation = out[method]
          if (isObject(operation)) out[method] = operationWith(path, method, operation, schemasObject, options)
        }
        return [path, out]
      })
    )
    const info = isObject(spec.info) ? spec.info : {}
    return {
      ...spec,
      info: { ...info, license: { name: "MIT", identifier: "MIT" } },
      paths: mapped,
      components: { ...components, schemas }
    }
  }

/**
 * The APIs' `servers` annotation: wherever Kassa is deployed, so its origin is a variable. `/docs` replaces it with
 * the server's own address (`KASSA_BASE_URL`).
 */
export const servers: ReadonlyArray<OpenApi.OpenAPISpecServer> = [
  {
    url: "{origin}",
    description: "Your Kassa server",
    variables: { origin: { default: "http://localhost:4000", description: "The server's origin, no trailing slash." } }
  }
]

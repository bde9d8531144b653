import { utf8 } from "./crypto.ts"
import { type KassaEvent, type KassaEventName, kassaEventNames } from "./events.ts"
import { WebhookVerificationError } from "./WebhookVerificationError.ts"

/** The raw request body. A Node.js `Buffer` is a `Uint8Array`. */
export type RawBody = string | Uint8Array | ArrayBuffer

const howToKeepRawBody =
  "the signature covers the exact bytes Kassa sent, and re-serialised JSON differs. Pass the raw bytes: Express express.raw({ type: 'application/json' }) on the webhook route, Fastify addContentTypeParser('application/json', { parseAs: 'buffer' }, …), Web Request verifyRequest(request, …) or await request.arrayBuffer()"

/** Bytes of the body, or a typed error saying how to get hold of them. */
export const bodyBytes = (body: unknown): Uint8Array => {
  if (typeof body === "string") {
    return utf8(body)
  }
  if (ArrayBuffer.isView(body)) {
    return new Uint8Array(body.buffer, body.byteOffset, body.byteLength)
  }
  // Not `instanceof`: an ArrayBuffer from another realm (worker, vm) would fail it.
  if (Object.prototype.toString.call(body) === "[object ArrayBuffer]") {
    return new Uint8Array(body as ArrayBuffer)
  }
  if (body === undefined || body === null) {
    throw new WebhookVerificationError(
      "invalid_body",
      `no body (got ${body}): in Express, mount express.raw({ type: 'application/json' }) on the webhook route; elsewhere, read the request body as bytes before verifying`
    )
  }
  if (typeof body === "object") {
    throw new WebhookVerificationError(
      "body_already_parsed",
      `the body was parsed before verification: ${howToKeepRawBody}`
    )
  }
  throw new WebhookVerificationError(
    "invalid_body",
    `expected the raw body as a string, Uint8Array, ArrayBuffer or Buffer, got ${typeof body}`
  )
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Whether an event's name is one this version of the package knows (see {@link parseEvent}). */
export const isKnownEventName = (value: unknown): value is KassaEventName =>
  kassaEventNames.some((name) => name === value)

/**
 * Parses the body once its signature holds. The body is Kassa's own, so only
 * the envelope is checked; a field-by-field validation would only reject
 * payloads that a newer Kassa adds fields to.
 */
export const parseEvent = (body: unknown, bytes: Uint8Array): KassaEvent => {
  let json: unknown
  try {
    json = JSON.parse(typeof body === "string" ? body : new TextDecoder("utf-8", { fatal: true }).decode(bytes))
  } catch (cause) {
    throw new WebhookVerificationError("invalid_body", "the signed body is not UTF-8 JSON", { cause })
  }
  if (!isRecord(json) || typeof json.id !== "string" || typeof json.created_at !== "string" || !isRecord(json.data)) {
    throw new WebhookVerificationError(
      "invalid_body",
      "the signed body is not a Kassa event ({ id, event, created_at, data })"
    )
  }
  if (!json.id.startsWith("evt_")) {
    throw new WebhookVerificationError("invalid_body", `the event id must start with evt_, got "${json.id}"`)
  }
  // An authentic event with a name this version does not know (one a newer Kassa sends) is returned, not
  // refused: refusing it would fail the delivery over and over for a receiver that simply ignores it.
  if (typeof json.event !== "string" || json.event.length === 0) {
    throw new WebhookVerificationError("invalid_body", "the signed body has no event name")
  }
  return json as unknown as KassaEvent
}

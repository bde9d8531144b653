/**
 * `POST /api/v1/payments` served below effect's router (a lane: see `Lane.ts`), answered as the contract's route
 * (`PaymentsHandlers.create`) answers it, in HttpApi's order: authentication (the runner's: 401/403/429 first,
 * decisions §5), then the headers, then the body, each decoded by the contract's own schemas with the API's parse
 * options and refused as `InvalidRequest` refuses (422, 400 for a body that is not JSON); then the same create
 * (`PaymentsHandlers.createAnswer`, idempotency included). `test/PaymentCreateLane.test.ts` holds the answers equal.
 *
 * Only a request whose framing the router would treat no differently takes the lane: exactly this path (no query),
 * `Content-Type: application/json` (parameters allowed), a `Content-Length` of at most 1 MiB and no
 * `Transfer-Encoding`. The rest (a missing or other content type: 415; a body over the limit: 413; chunked bodies)
 * goes to the router.
 */
import type { IncomingMessage } from "node:http"
import { InvalidRequest, MerchantApi, type PaymentRequests, PaymentsApi } from "@kassa/core"
import { Effect, Schema } from "effect"
import type { Digest } from "effect/crypto"
import { HttpApiError } from "effect/http-api"
import type { IdempotencyStore } from "../ledger/IdempotencyStore.ts"
import { MerchantPayments } from "../payments/MerchantPayments.ts"
import * as Lane from "./Lane.ts"
import { createAnswer, fingerprintOfText } from "./PaymentsHandlers.ts"

/** The route, as the router labels its metrics and names its spans. */
export const route = `${PaymentsApi.apiPrefix}/payments`

/** The server's body limit (KassaServer's `BodyLimit`); a larger body is the router's to refuse. */
const maxBodyBytes = 1024 * 1024

const endpoint = PaymentsApi.PaymentsApi.endpoints.create
const jsonPayload = endpoint.payload.get("application/json")
if (jsonPayload === undefined || endpoint.headers === undefined) {
  throw new Error("PaymentCreateLane: the contract's create no longer takes a JSON body and headers")
}
type CreateHeaders = Parameters<typeof createAnswer>[1]["headers"]

// Decoded as HttpApiBuilder decodes them: the endpoint's payload schemas as one union, the API's parse options. The
// group's endpoint map erases the schemas' types; these are the create's, which need no services.
const decodeBody = Schema.decodeUnknownEffect(Schema.Union(jsonPayload.schemas), MerchantApi.payloadParseOptions) as (
  input: unknown
) => Effect.Effect<PaymentRequests.CreatePaymentBody, Schema.SchemaError>
const decodeHeaders = Schema.decodeUnknownEffect(endpoint.headers, MerchantApi.headersParseOptions) as (
  input: unknown
) => Effect.Effect<CreateHeaders, Schema.SchemaError>

/** Whether the lane takes the request. */
export const takes = (request: IncomingMessage): boolean => {
  if (request.method !== "POST" || request.url !== route) return false
  const contentType = request.headers["content-type"]
  if (contentType === undefined) return false
  const semicolon = contentType.indexOf(";")
  const mediaType = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase()
  if (mediaType !== "application/json") return false
  const length = request.headers["content-length"]
  if (length === undefined || request.headers["transfer-encoding"] !== undefined) return false
  return /^\d{1,7}$/.test(length) && Number(length) <= maxBodyBytes
}

const textDecoder = new TextDecoder()

/**
 * The whole body (its length is known and bounded), decoded as effect's request decodes it: collected from the
 * moment the lane takes the request, while the key's statement is out, so that the work usually finds it complete
 * instead of waiting for it (one suspension of the fiber less per create).
 */
const collectBody = (request: IncomingMessage): Effect.Effect<string> => {
  const chunks: Array<Buffer> = []
  let outcome: Effect.Effect<string> | undefined
  let waiting: ((body: Effect.Effect<string>) => void) | undefined
  const settle = (body: Effect.Effect<string>) => {
    outcome = body
    request.off("data", onData)
    request.off("end", onEnd)
    request.off("error", onError)
    waiting?.(body)
  }
  const onData = (chunk: Buffer) => chunks.push(chunk)
  const onEnd = () => settle(Effect.succeed(textDecoder.decode(Buffer.concat(chunks))))
  const onError = (error: Error) => settle(Effect.die(error))
  request.on("data", onData)
  request.once("end", onEnd)
  request.once("error", onError)
  return Effect.suspend(
    () =>
      outcome ??
      Effect.callback<string>((resume) => {
        waiting = resume
        return Effect.sync(() => {
          waiting = undefined
        })
      })
  )
}

/** A decoding failure, refused as `InvalidRequest` refuses the router's. */
const invalid = (kind: "Headers" | "Payload", cause: Schema.SchemaError) => {
  const error = InvalidRequest.fromSchemaError(new HttpApiError.HttpApiSchemaError({ kind, cause }))
  return error === undefined ? Effect.die(cause) : Effect.fail(error)
}

/** The lane's request handler, given the server's services. */
export const make = Effect.gen(function* () {
  const payments = yield* MerchantPayments
  // An Idempotency-Key's create needs these; the runner runs the work in this context, which has them.
  const serve = yield* Lane.runnerWith<IdempotencyStore | Digest.Digest>()

  const create = (request: IncomingMessage): Lane.LaneWork<IdempotencyStore | Digest.Digest> => {
    const readBody = collectBody(request)
    return ({ caller, application }) =>
      Effect.gen(function* () {
        const headers = yield* Effect.result(decodeHeaders(request.headers))
        if (headers._tag === "Failure") return yield* invalid("Headers", headers.failure)
        const text = yield* readBody
        let json: unknown
        try {
          json = text === "" ? undefined : JSON.parse(text)
        } catch {
          return yield* Effect.fail(InvalidRequest.invalidJson())
        }
        const body = yield* Effect.result(decodeBody(json))
        if (body._tag === "Failure") return yield* invalid("Payload", body.failure)
        return yield* createAnswer(payments, {
          scope: { applicationId: caller.applicationId, mode: caller.mode },
          headers: headers.success,
          body: body.success,
          application,
          fingerprint: fingerprintOfText(text)
        })
      })
  }

  return (request, response) => {
    if (!takes(request)) return false
    serve(request, response, route, create(request))
    return true
  }
}) satisfies Effect.Effect<Lane.LaneHandler, unknown, unknown>

/**
 * Sending one call of a core contract and reading its answer, shared by the merchant client (`KassaClient`), its
 * events (`Events`) and the CLI's operator calls: each attempt within the timeout, the answer decoded by the endpoint's
 * contract (whatever it does not cover still an SDK error), and the retries between attempts (backoff with jitter,
 * `Retry-After` honoured up to a minute).
 */
import { ApiError, ErrorEnvelope } from "@kassa/core"
import { Duration, Effect, Option, Schema } from "effect"
import { HttpClientError, type HttpClientResponse } from "effect/http"
import {
  type AnyKassaApiError,
  type AnyKassaError,
  ConnectionError,
  fromApiError,
  HttpError,
  KassaApiError,
  RateLimitedError,
  type ResponseFacts,
  TimeoutError,
  UnexpectedResponseError
} from "./errors.ts"
import type { RequestOptions } from "./KassaClient.ts"

const isContractError = Schema.is(ApiError.ApiError)

/** `Retry-After` in seconds: delay-seconds or an HTTP date. */
const parseRetryAfter = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined
  if (/^\s*\d+\s*$/.test(value)) return Number(value)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000))
}

const factsOf = (response: HttpClientResponse.HttpClientResponse): ResponseFacts => ({
  status: response.status,
  requestId: response.headers["request-id"],
  retryAfter: parseRetryAfter(response.headers["retry-after"])
})

const bodyExcerpt = (body: string) => (body.length > 1000 ? `${body.slice(0, 1000)}…` : body)

// Any envelope, to read the code of an answer the endpoint's declaration does not cover.
const decodeAnyEnvelope = Schema.decodeUnknownOption(
  Schema.fromJsonString(Schema.Struct({ error: Schema.Struct({ code: Schema.String, message: Schema.String }) }))
)

// The contract's envelope of every code but `rate_limited` (whose wire form includes a header) and `http_error`
// (whose status is data); those two are built from the answer directly.
const { RateLimited: _, ...envelopes } = ErrorEnvelope.byTag
const decodeContractEnvelope = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Union(Object.values(envelopes))))

/**
 * An error answer the endpoint's declaration does not cover (a status it does not list, an answer without its
 * headers) or that is not Kassa's at all (a proxy's HTML page). A Kassa envelope still becomes its code's class.
 */
const undeclaredAnswer = (body: string, facts: ResponseFacts): AnyKassaApiError | UnexpectedResponseError => {
  const unexpected = (message: string) => new UnexpectedResponseError({ ...facts, message, body: bodyExcerpt(body) })
  const envelope = decodeAnyEnvelope(body)
  if (Option.isNone(envelope)) {
    return unexpected(`The server answered ${facts.status} with a body that is not a Kassa error.`)
  }
  const { code, message } = envelope.value.error
  if (code === ApiError.catalogue.RateLimited.code) return new RateLimitedError({ ...facts, message })
  if (code === ApiError.catalogue.HttpError.code) return new HttpError({ ...facts, message })
  const error = decodeContractEnvelope(body)
  return Option.isSome(error) && isContractError(error.value)
    ? fromApiError(error.value, facts)
    : unexpected(`Kassa answered ${facts.status} with an error this SDK does not know: ${code}: ${message}`)
}

/** Decodes an answer with the endpoint's contract; whatever it does not cover still becomes an SDK error. */
const decodeAnswer = <A>(
  response: HttpClientResponse.HttpClientResponse,
  decode: (response: HttpClientResponse.HttpClientResponse) => Effect.Effect<A, unknown>
): Effect.Effect<A, AnyKassaError> => {
  const facts = factsOf(response)
  return Effect.catch(decode(response), (error) => {
    if (isContractError(error)) return Effect.fail(fromApiError(error, facts))
    // The body is cached, so reading it again costs nothing; failing to read it means the connection broke off.
    return response.text.pipe(
      Effect.mapError(
        (cause) => new ConnectionError({ message: "The connection broke off during the answer.", cause })
      ),
      Effect.flatMap((body) =>
        Effect.fail(
          response.status < 300
            ? new UnexpectedResponseError({
                ...facts,
                message: `The server answered ${facts.status} with a body that does not match the API contract.`,
                body: bodyExcerpt(body),
                cause: error
              })
            : undeclaredAnswer(body, facts)
        )
      )
    )
  })
}

// --- retries ----------------------------------------------------------------------------------------------------------

const maxRetryAfterSeconds = 60

/** Exponential backoff from 0.5 s, capped at 8 s, with jitter so that many clients do not retry in step. */
const backoff = (retry: number): Duration.Duration =>
  Duration.millis(Math.min(500 * 2 ** retry, 8000) * (0.5 + Math.random() / 2))

const afterRetryAfter = (seconds: number | undefined, otherwise: Duration.Duration): Duration.Duration | undefined =>
  seconds === undefined ? otherwise : seconds <= maxRetryAfterSeconds ? Duration.seconds(seconds) : undefined

/**
 * How long to wait before retrying after `error`, or `undefined` to give up: an error answer as the catalogue's retry
 * rule for its code says (the specification's retry rules: 4xx answers repeat until the request changes, except the
 * in-progress and busy 409s and 429; 502 `provider_error` is final, the payment exists as `failed` and a retry with
 * the same key replays it), the failures without a code as 5xx.
 */
export const retryDelay = (error: AnyKassaError, retry: number): Duration.Duration | undefined => {
  if (error instanceof KassaApiError) {
    switch (ApiError.byCode[error.code].retry) {
      case "never":
        return undefined
      case "wait":
        return afterRetryAfter(error.retryAfter, Duration.seconds(1))
      case "backoff":
        return afterRetryAfter(error.retryAfter, backoff(retry))
    }
  }
  switch (error._tag) {
    case "ConnectionError":
    case "TimeoutError":
      return backoff(retry)
    case "UnexpectedResponseError":
      return error.status >= 500 ? afterRetryAfter(error.retryAfter, backoff(retry)) : undefined
  }
}

const withRetries = <A>(attempt: Effect.Effect<A, AnyKassaError>, maxRetries: number) => {
  const loop = (retry: number): Effect.Effect<A, AnyKassaError> =>
    Effect.catch(attempt, (error) => {
      const delay = retry < maxRetries ? retryDelay(error, retry) : undefined
      return delay === undefined ? Effect.fail(error) : Effect.andThen(Effect.sleep(delay), loop(retry + 1))
    })
  return loop(0)
}

// --- sending -----------------------------------------------------------------------------------------------------------

/** What sending needs of a client's settings. */
export interface SendSettings {
  readonly baseUrl: string
  readonly maxRetries: number
  readonly timeout: Duration.Duration
}

/**
 * One call through a typed client of a core contract (`HttpApiClient.make`, `responseMode: "response-only"`): each
 * attempt (request, then answer) within the timeout, the answer decoded by the endpoint's contract (whatever it does
 * not cover still an SDK error), and the retries between attempts. `kassa admin` sends the operator API's calls with
 * it, so both clients fail and retry alike.
 */
export const sendWith =
  (settings: SendSettings) =>
  <A>(
    request: Effect.Effect<HttpClientResponse.HttpClientResponse, unknown>,
    decode: (response: HttpClientResponse.HttpClientResponse) => Effect.Effect<A, unknown>,
    options: RequestOptions | undefined
  ): Effect.Effect<A, AnyKassaError> => {
    const timeout = options?.timeout === undefined ? settings.timeout : Duration.fromInputUnsafe(options.timeout)
    const attempt = request.pipe(
      Effect.catch((error) =>
        // Requests are checked before they are encoded, so only the transport can fail here.
        HttpClientError.isHttpClientError(error) && error.reason._tag === "TransportError"
          ? Effect.fail(new ConnectionError({ message: `Could not reach Kassa at ${settings.baseUrl}.`, cause: error }))
          : Effect.die(error)
      ),
      Effect.flatMap((response) => decodeAnswer(response, decode)),
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () =>
          Effect.fail(new TimeoutError({ message: `Kassa did not answer within ${Duration.format(timeout)}.` }))
      })
    )
    return withRetries(attempt, options?.maxRetries ?? settings.maxRetries)
  }

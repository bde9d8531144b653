/**
 * Requests the endpoint schemas refuse. Left alone, HttpApi answers a request that fails decoding with an empty 400;
 * this API-level middleware declares the answers the specification wants instead, and {@link fromSchemaError} says
 * which one a decoding failure gets:
 *
 * | Failed part                        | Answer                                                              |
 * |------------------------------------|---------------------------------------------------------------------|
 * | path: `{id}` is not a payment id   | 404 `not_found`: no payment has that id                             |
 * | body is not JSON                   | 400 `http_error` (decisions §2)                                     |
 * | body, query or headers             | 422 `validation_failed`, `fields` as `RequestValidation.fieldErrors` |
 *
 * Unknown body fields are refused by the API's `PayloadParseOptions` (`onExcessProperty: "error"`, see
 * `MerchantApi`), so they arrive here as ordinary schema issues and are named in `fields`.
 *
 * Two more answers come from HttpApi itself rather than from a schema, and {@link layer} renders them too:
 * - a body with a `Content-Type` other than JSON: HttpApi answers a bare 415 → 415 `http_error`;
 * - a body over `HttpIncomingMessage.MaxBodySize` (the server sets 1 MiB): reading it dies → 413 `http_error`.
 *
 * {@link layer} is pure (no I/O, no services), so the server provides it as is; the contract tests run the same layer.
 */
import { Effect, Layer, type Types } from "effect"
import { HttpServerError } from "effect/http"
import { HttpApiError, HttpApiMiddleware } from "effect/http-api"
import { HttpError, NotFound, type ValidationFailed } from "../errors/ApiError.ts"
import { fieldErrors, validationFailed } from "../payments/RequestValidation.ts"
import * as ErrorEnvelope from "./ErrorEnvelope.ts"

/** Turns request decoding failures into the specification's errors. Implemented by {@link layer}. */
export class InvalidRequest extends HttpApiMiddleware.Service<InvalidRequest>()("@kassa/core/api/InvalidRequest", {
  error: [
    ErrorEnvelope.ValidationFailed,
    ErrorEnvelope.NotFound,
    ErrorEnvelope.BadRequest,
    ErrorEnvelope.PayloadTooLarge,
    ErrorEnvelope.UnsupportedMediaType
  ]
}) {}

/** What a request decoding failure is answered with. */
export type RequestError = ValidationFailed | NotFound | HttpError

// The message HttpApi gives a JSON body that does not parse (HttpApiBuilder `decodePayload`); the in-process contract
// test sends such a body, so a change upstream shows up there.
const invalidJsonMessage = "Expected a valid JSON body"

// Header names as the specification writes them (`idempotency-key` → `Idempotency-Key`); HttpApi sees them lower-case.
const headerName = (name: string): string =>
  name
    .split("-")
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("-")

/** The answer to a body that is not JSON. */
export const invalidJson = () => new HttpError({ message: "The request body is not valid JSON.", httpStatus: 400 })

/**
 * The answer to a request whose `kind` part failed decoding, or `undefined` for failures of the server's own
 * response (`Body`, `ResponseHeaders`): those are bugs, which HttpApi answers with 500.
 */
export const fromSchemaError = (error: HttpApiError.HttpApiSchemaError): RequestError | undefined => {
  const issue = error.cause.issue
  switch (error.kind) {
    // The only path parameter of the API is a payment id.
    case "Params":
      return new NotFound({ message: "No payment with this id." })
    case "Payload":
      if (issue._tag === "InvalidValue" && issue.annotations?.message === invalidJsonMessage) return invalidJson()
      return validationFailed(fieldErrors(issue))
    case "Query":
      return validationFailed(fieldErrors(issue))
    case "Headers":
      return validationFailed(
        Object.fromEntries(Object.entries(fieldErrors(issue)).map(([name, messages]) => [headerName(name), messages]))
      )
    case "Body":
    case "ResponseHeaders":
      return undefined
  }
}

// HttpApi reads a buffered body with `Effect.orDie`, so a body over the limit arrives as this defect.
const isBodyTooLarge = (defect: unknown): boolean =>
  HttpServerError.isHttpServerError(defect) &&
  defect.reason._tag === "RequestParseError" &&
  defect.reason.reason === "BodyTooLarge"

const payloadTooLarge = new HttpError({ message: "The request body is larger than 1 MiB.", httpStatus: 413 })

const unsupportedMediaType = new HttpError({
  message: "A request body must be sent with `Content-Type: application/json`.",
  httpStatus: 415
})

/**
 * The server's implementation of {@link InvalidRequest}. Failures of the server's own response (`Body`,
 * `ResponseHeaders`) are left to HttpApi, which answers 500.
 */
export const layer: Layer.Layer<InvalidRequest> = Layer.succeed(InvalidRequest, (httpEffect) => {
  const requestErrors = Effect.catch(httpEffect, (error): Effect.Effect<never, Types.unhandled | RequestError> => {
    const requestError = HttpApiError.HttpApiSchemaError.is(error) ? fromSchemaError(error) : undefined
    return requestError === undefined ? Effect.fail(error) : Effect.fail(requestError)
  })
  const oversized = Effect.catchDefect(requestErrors, (defect) =>
    isBodyTooLarge(defect) ? Effect.fail(payloadTooLarge) : Effect.die(defect)
  )
  // Handlers never answer 415 themselves: this is HttpApi refusing the request's `Content-Type`.
  return Effect.flatMap(oversized, (response) =>
    response.status === 415 ? Effect.fail(unsupportedMediaType) : Effect.succeed(response)
  )
})

/**
 * The HTTP form of every error in the catalogue. Each schema's type side is the `ApiError` class (what handlers fail
 * with and what the typed client gives back) and its encoded side is the wire object
 * `{"error":{"code":<literal>,"message":string,…added fields}}`, answered with the catalogue's status. Endpoints list
 * these schemas, never the bare classes, so the server, the typed client and `/openapi.json` all agree with
 * `ApiError.toWire` (the tests check every class against it).
 *
 * `RateLimited` also answers with `Retry-After: <retryAfterSeconds>` (decisions §5); `retryAfterSeconds` is not in the
 * body.
 *
 * `HttpError` has one schema per status it is used with (400, 405, 413, 415): its status is data, and a schema is
 * chosen by refining on `httpStatus`, so encoding an `HttpError` picks the schema of its own status.
 */
import { Schema, SchemaTransformation } from "effect"
import { HttpApiSchema } from "effect/http-api"
import * as ApiError from "../errors/ApiError.ts"

type Tag = ApiError.ApiErrorTag

// The error classes hold plain data: every field is a codec that needs no services.
type ErrorClass<T extends Tag> = Schema.Top & {
  readonly fields: { readonly _tag: Schema.tag<T> } & { readonly [field: string]: Schema.Codec<unknown, unknown> }
}

/**
 * The wire object of one code: `code` is a literal, `message` and the added fields come from the class. Named
 * `<Tag>Error` (`ServerError`, not `ServerErrorError`) in the OpenAPI components.
 */
const wireOf = <const C extends ApiError.ErrorCode, F extends Schema.Struct.Fields>(
  tag: Tag,
  code: C,
  added: F,
  description: string
) =>
  Schema.Struct({ error: Schema.Struct({ code: Schema.Literal(code), ...added }) }).annotate({
    identifier: tag.endsWith("Error") ? tag : `${tag}Error`,
    description
  })

// OpenAPI describes a response by its type side; saying the code there lists the codes of each status.
const responseDescription = (code: ApiError.ErrorCode, description: string) => ({
  description: `\`${code}\`: ${description}`
})

/**
 * The envelope schema of an error whose wire object is its fields minus `_tag`, plus `code` (every class but
 * `RateLimited` and `HttpError`, whose internal fields steer the HTTP answer instead). Code, status and description
 * come from the catalogue.
 *
 * The reshaping is structural (rename `_tag` to `code`, nest under `error`). TypeScript cannot follow rest and spread
 * through generic field types, hence the two casts; "envelope equals toWire" in the tests covers every class.
 */
const envelope = <const T extends EnvelopeTag, S extends ErrorClass<T>>(tag: T, errorClass: S) => {
  const { code, status, description } = ApiError.catalogue[tag] as {
    readonly code: (typeof ApiError.catalogue)[T]["code"]
    readonly status: number
    readonly description: string
  }
  const { _tag: _, ...added } = errorClass.fields
  const Wire = wireOf(tag, code, added, description)
  type Wire = typeof Wire.Type
  return Wire.pipe(
    Schema.decodeTo(
      errorClass,
      SchemaTransformation.transform<S["Encoded"], Wire>({
        decode: ({ error: { code: _, ...fields } }) => ({ ...fields, _tag: tag }) as S["Encoded"],
        encode: (encoded) => {
          const { _tag: _, ...fields } = encoded as Readonly<Record<string, unknown>>
          return { error: { ...fields, code } } as Wire
        }
      })
    ),
    HttpApiSchema.status(status)
  ).annotate(responseDescription(code, description))
}

/** The tags with an {@link envelope}. */
type EnvelopeTag = Exclude<Tag, "HttpError" | "RateLimited">

type Envelope<T extends EnvelopeTag> = (typeof ApiError.catalogue)[T]["error"] extends infer S extends ErrorClass<T>
  ? ReturnType<typeof envelope<T, S>>
  : never

const envelopes = Object.fromEntries(
  Object.entries(ApiError.catalogue).flatMap(([tag, row]) =>
    tag === "HttpError" || tag === "RateLimited" ? [] : [[tag, envelope(tag as EnvelopeTag, row.error as never)]]
  )
) as unknown as { readonly [T in EnvelopeTag]: Envelope<T> }

// --- 429 ----------------------------------------------------------------------------------------------------------

const rateLimited = ApiError.catalogue.RateLimited

/** 429 with `Retry-After` in whole seconds; `retryAfterSeconds` travels in the header, not in the body. */
export const RateLimited = ApiError.RateLimited.pipe(
  HttpApiSchema.encodeToWithHeaders(
    {
      body: wireOf("RateLimited", rateLimited.code, { message: Schema.String }, rateLimited.description).pipe(
        HttpApiSchema.status(rateLimited.status)
      ),
      headers: { "retry-after": Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)) }
    },
    {
      decode: ({ body, headers }) =>
        new ApiError.RateLimited({ message: body.error.message, retryAfterSeconds: headers["retry-after"] }),
      encode: (error) => ({
        body: { error: { code: rateLimited.code, message: error.message } },
        headers: { "retry-after": error.retryAfterSeconds }
      })
    }
  )
).annotate(responseDescription(rateLimited.code, rateLimited.description))

// --- http_error ---------------------------------------------------------------------------------------------------

/** Statuses answered with `http_error` (decisions §2, §5). */
export type HttpErrorStatus = 400 | 405 | 413 | 415

// One wire schema for every status, so OpenAPI shows one `HttpError` component.
const HttpErrorWire = wireOf(
  "HttpError",
  ApiError.catalogue.HttpError.code,
  { message: Schema.String },
  ApiError.catalogue.HttpError.description
)

const httpError = (status: HttpErrorStatus, description: string) =>
  HttpErrorWire.pipe(
    Schema.decodeTo(
      // Only an `HttpError` of this status encodes here, so a union of these picks the one matching `httpStatus`.
      ApiError.HttpError.check(
        Schema.makeFilter((error) => error.httpStatus === status, { expected: `an HttpError with status ${status}` })
      ),
      SchemaTransformation.transform<typeof ApiError.HttpError.Encoded, typeof HttpErrorWire.Type>({
        decode: ({ error }) => ({ _tag: "HttpError", message: error.message, httpStatus: status }),
        encode: (error) => ({ error: { code: ApiError.catalogue.HttpError.code, message: error.message } })
      })
    ),
    HttpApiSchema.status(status)
  ).annotate(responseDescription(ApiError.catalogue.HttpError.code, description))

export const BadRequest = httpError(400, "The request body is not valid JSON.")
export const MethodNotAllowed = httpError(405, "A known path with the wrong method; `Allow` lists the methods.")
export const PayloadTooLarge = httpError(413, "The request body is larger than 1 MiB.")
export const UnsupportedMediaType = httpError(415, "A request body was sent with a `Content-Type` other than JSON.")

/** The `HttpError` schema of each status. */
export const httpErrors = {
  400: BadRequest,
  405: MethodNotAllowed,
  413: PayloadTooLarge,
  415: UnsupportedMediaType
} as const satisfies Record<HttpErrorStatus, Schema.Top>

/** The envelope schema of every error except `HttpError` (see {@link httpErrors}), by tag. */
export const byTag = { ...envelopes, RateLimited } as const satisfies Record<Exclude<Tag, "HttpError">, Schema.Top>

// Named, for the endpoint declarations.
export const {
  Unauthenticated,
  InvalidApiKey,
  ApplicationDisabled,
  ApplicationPendingReview,
  ApplicationSuspended,
  IpNotAllowed,
  NotFound,
  OrderReferenceAlreadyPaid,
  IdempotencyKeyReused,
  IdempotencyRequestInProgress,
  PaymentNotCancellable,
  PaymentNotRefundable,
  PaymentNotPending,
  PaymentBusy,
  ValidationFailed,
  MethodRequired,
  MethodNotEnabled,
  AmountBelowMinimum,
  AmountAboveMaximum,
  ReturnUrlNotAllowed,
  RefundAmountExceedsRefundable,
  RefundsProcessedManually,
  ProviderError,
  ServerError
} = envelopes

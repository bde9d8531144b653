/**
 * The bases of every error the SDK fails with, the class of an error code (made from the core's error catalogue),
 * and the failures that have no code on the wire (no connection, no answer in time, an answer that is not Kassa's).
 * All are `Error` subclasses, so `instanceof` works in Promise code, and yieldable Effect errors with a literal
 * `_tag`, so `Effect.catchTag` works in Effect code.
 */
import { ApiError } from "@kassa/core"
import { Data } from "effect"

/** The base of every error of this package. Branch on `code` (or the class), never on `message`. */
export abstract class KassaError extends Data.Error<{ readonly message: string; readonly cause?: unknown }> {
  abstract readonly _tag: string
  abstract readonly code: string
}
// `name` is the tag, so stack traces and logs show the class. A getter on the prototype rather than a field keeps
// it out of the instances' own (enumerable, serialised) properties; stacks read it lazily, once `_tag` is set.
Object.defineProperty(KassaError.prototype, "name", {
  configurable: true,
  get(this: KassaError) {
    return this._tag
  }
})

/** What every error answer of the API carries besides its own fields. */
export interface ApiErrorInit {
  readonly message: string
  /** The HTTP status of the answer. */
  readonly status: number
  /** The `Request-Id` of the answer; `undefined` when the SDK refused the request before sending it. */
  readonly requestId: string | undefined
  /** `Retry-After` of the answer, in seconds, when it had one. */
  readonly retryAfter?: number | undefined
}

/** An error answer of the Kassa API: `{"error":{"code","message",…}}`. */
export abstract class KassaApiError extends KassaError {
  abstract override readonly code: ApiError.ErrorCode
  /** The HTTP status of the answer (the status the server gives, for requests refused before sending). */
  readonly status: number
  /** The `Request-Id` of the answer, to quote to the operator; `undefined` when nothing was sent. */
  readonly requestId: string | undefined
  /** Seconds to wait before retrying, from `Retry-After`; set on 429 `rate_limited` and 409 in-progress answers. */
  readonly retryAfter: number | undefined
  constructor(init: ApiErrorInit) {
    super({ message: init.message })
    this.status = init.status
    this.requestId = init.requestId
    this.retryAfter = init.retryAfter
  }
}

// --- the class of an error code ---------------------------------------------------------------------------------

type Tag = ApiError.ApiErrorTag
type Code<T extends Tag> = (typeof ApiError.catalogue)[T]["code"]

/** The SDK's name of a code's class: the core's tag with `Error` appended, unless it ends so (`ServerError`). */
export type ClassName<T extends Tag> = T extends `${string}Error` ? T : `${T}Error`

/** The wire's `status` of a code (the payment's status) is `payment_status` here, since `status` is the HTTP status. */
type FieldName<K> = K extends "status" ? "payment_status" : K
export const fieldName = (wire: string): string => (wire === "status" ? "payment_status" : wire)

type Wire<T extends Tag> = ApiError.AddedFields<T>
type OptionalKeys<W> = { readonly [K in keyof W]-?: {} extends Pick<W, K> ? K : never }[keyof W]
type OrUndefined<W, K extends keyof W> = W[K] | (K extends OptionalKeys<W> ? undefined : never)

/** What the constructor of a code's class takes besides {@link ApiErrorInit}: the code's added fields. */
export type FieldsInit<T extends Tag> = { readonly [K in keyof Wire<T> as FieldName<K>]: OrUndefined<Wire<T>, K> }

/** The added fields of a code, on its SDK error (`undefined` where the wire object may leave one out). */
export type Fields<T extends Tag> = { readonly [K in keyof Wire<T> as FieldName<K>]-?: OrUndefined<Wire<T>, K> }

/** An error answer with the code of `T`: its `_tag`, its `code` and its added fields. */
export type KassaApiErrorOf<T extends Tag> = KassaApiError & {
  readonly _tag: ClassName<T>
  readonly code: Code<T>
} & Fields<T>

/** The class of the code of `T`. */
export interface KassaApiErrorClass<T extends Tag> {
  new (init: ApiErrorInit & FieldsInit<T>): KassaApiErrorOf<T>
  /** The code this class stands for. */
  readonly code: Code<T>
}

/**
 * The class of a code of the core's error catalogue: its `_tag` ({@link ClassName}), `code` and added fields all come
 * from the catalogue's row, so the SDK cannot disagree with the server about them.
 */
export const apiErrorClass = <T extends Tag>(tag: T): KassaApiErrorClass<T> => {
  const { code } = ApiError.catalogue[tag]
  const name = tag.endsWith("Error") ? tag : `${tag}Error`
  const fields = ApiError.addedFields(tag).map(fieldName)
  class ErrorOfCode extends KassaApiError {
    static readonly code = code
    readonly _tag = name
    readonly code = code
    constructor(init: ApiErrorInit & Readonly<Record<string, unknown>>) {
      super(init)
      Object.assign(this, Object.fromEntries(fields.map((field) => [field, init[field]])))
    }
  }
  return ErrorOfCode as unknown as KassaApiErrorClass<T>
}

// --- no error code on the wire --------------------------------------------------------------------------------------

/** The request did not get an answer: the connection failed or broke off. Retried. */
export class ConnectionError extends KassaError {
  readonly _tag = "ConnectionError"
  readonly code = "connection_error"
}

/** No complete answer within the timeout (per attempt). Retried. */
export class TimeoutError extends KassaError {
  readonly _tag = "TimeoutError"
  readonly code = "timeout"
}

/**
 * An answer that is not a Kassa answer: not JSON (a proxy's HTML error page), an unknown error code, or a body that
 * does not match the API contract. Retried when `status` is 5xx.
 */
export class UnexpectedResponseError extends KassaError {
  readonly _tag = "UnexpectedResponseError"
  readonly code = "unexpected_response"
  readonly status: number
  readonly requestId: string | undefined
  readonly retryAfter: number | undefined
  /** The start of the body, for logs. */
  readonly body: string
  constructor(init: ApiErrorInit & { readonly body: string; readonly cause?: unknown }) {
    super({ message: init.message, cause: init.cause })
    this.status = init.status
    this.requestId = init.requestId
    this.retryAfter = init.retryAfter
    this.body = init.body
  }
}

/** Promise API only: the call's `AbortSignal` fired; `cause` is the signal's reason. */
export class RequestAbortedError extends KassaError {
  readonly _tag = "RequestAbortedError"
  readonly code = "request_aborted"
}

/**
 * Every error the SDK fails with, and the lookup from an answer's error code to its class: one class per code of the
 * core's error catalogue (`ApiErrors.ts`), plus the failures with no code on the wire (`KassaError.ts`).
 */
import { ApiError } from "@kassa/core"
import * as ApiErrors from "./ApiErrors.ts"
import {
  type ApiErrorInit,
  type ConnectionError,
  fieldName,
  type TimeoutError,
  type UnexpectedResponseError
} from "./KassaError.ts"

export * from "./ApiErrors.ts"
export * from "./KassaError.ts"

type ApiErrorClass = (typeof ApiErrors)[keyof typeof ApiErrors]
type ClassOf<C extends ApiError.ErrorCode> = Extract<ApiErrorClass, { readonly code: C }>

/** Every error answer of the API, one class per code. */
export type AnyKassaApiError = InstanceType<ApiErrorClass>

/** What an SDK call can fail with (the Promise API adds {@link RequestAbortedError}). */
export type AnyKassaError = AnyKassaApiError | ConnectionError | TimeoutError | UnexpectedResponseError

// A code of the catalogue without a class in ApiErrors.ts is named in the type error here.
type Unclassed = { readonly [C in ApiError.ErrorCode]: [ClassOf<C>] extends [never] ? C : never }[ApiError.ErrorCode]
true satisfies [Unclassed] extends [never] ? true : Unclassed

/** The class of each error code. */
export const errorClasses = Object.fromEntries(
  Object.values(ApiErrors).map((ErrorClass) => [ErrorClass.code, ErrorClass])
) as { readonly [C in ApiError.ErrorCode]: ClassOf<C> }

/** The response facts an API error carries besides the wire object. */
export type ResponseFacts = Omit<ApiErrorInit, "message">

type AnyInit = ApiErrorInit & Readonly<Record<string, unknown>>

/**
 * The SDK error of an error decoded by the API contract (the core's `ApiError` classes): the wire fields (`status`
 * as `payment_status`), plus the status, `Request-Id` and `Retry-After` of the answer.
 */
export const fromApiError = (error: ApiError.ApiError, facts: ResponseFacts): AnyKassaApiError => {
  const ErrorClass = errorClasses[ApiError.catalogue[error._tag].code] as new (init: AnyInit) => AnyKassaApiError
  const wire = error as unknown as Readonly<Record<string, unknown>>
  const fields = ApiError.addedFields(error._tag).map((field) => [fieldName(field), wire[field]])
  return new ErrorClass({
    ...facts,
    // `Retry-After` as the contract decoded it.
    ...("retryAfterSeconds" in error ? { retryAfter: error.retryAfterSeconds } : {}),
    ...Object.fromEntries(fields),
    message: error.message
  })
}

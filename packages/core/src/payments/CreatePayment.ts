/**
 * The create rules, in the order of decisions §2: `validation_failed` (all fields at once) →
 * `method_required` / `method_not_enabled` → `amount_below_minimum` / `amount_above_maximum` →
 * `return_url_not_allowed`; then `order_reference_already_paid`, which needs the stored payments and so
 * is its own step ({@link checkOrderReference}).
 */
import { Result, Schema } from "effect"
import type { ApplicationSettings } from "../domain/Application.ts"
import type { Currency, Locale, Method } from "../domain/Money.ts"
import type { Customer, Metadata } from "../domain/Payment.ts"
import {
  AmountAboveMaximum,
  AmountBelowMinimum,
  type FieldErrors,
  MethodNotEnabled,
  MethodRequired,
  OrderReferenceAlreadyPaid,
  ReturnUrlNotAllowed,
  type ValidationFailed
} from "../errors/ApiError.ts"
import { CreatePaymentBody } from "./PaymentRequests.ts"
import { emptyFields, fieldErrors, validationFailed } from "./RequestValidation.ts"

/** A create request that passed every rule, with the application's defaults filled in. */
export interface PaymentDraft {
  readonly amount: number
  readonly currency: Currency
  readonly method: Method
  readonly order_reference: string
  readonly description: string | null
  readonly customer: Customer
  readonly locale: Locale
  readonly return_url: string | null
  readonly metadata: Metadata
}

export type CreateRejection =
  | ValidationFailed
  | MethodRequired
  | MethodNotEnabled
  | AmountBelowMinimum
  | AmountAboveMaximum
  | ReturnUrlNotAllowed

const decodeBody = Schema.decodeUnknownResult(CreatePaymentBody, { errors: "all", onExcessProperty: "error" })

/** The currency rule joins the field errors: an unoffered currency is an invalid field like any other. */
const currencyErrors = (currency: string | undefined, settings: ApplicationSettings): FieldErrors => {
  if (currency === undefined) {
    return settings.currencies.length === 0 ? { currency: ["the application offers no currency"] } : {}
  }
  return settings.currencies.includes(currency)
    ? {}
    : { currency: [`is not offered by the application (offered: ${settings.currencies.join(", ")})`] }
}

const validateFields = (
  body: unknown,
  settings: ApplicationSettings
): Result.Result<CreatePaymentBody, ValidationFailed> => {
  const decoded = decodeBody(body)
  const candidate =
    typeof body === "object" && body !== null && "currency" in body && typeof body.currency === "string"
      ? body.currency
      : undefined
  const fields: Record<string, ReadonlyArray<string>> = Object.assign(
    emptyFields<ReadonlyArray<string>>(),
    Result.isFailure(decoded) ? fieldErrors(decoded.failure.issue) : {}
  )
  for (const [key, messages] of Object.entries(currencyErrors(candidate, settings))) {
    fields[key] = [...(fields[key] ?? []), ...messages]
  }
  if (Object.keys(fields).length > 0 || Result.isFailure(decoded)) {
    return Result.fail(validationFailed(fields as FieldErrors))
  }
  return Result.succeed(decoded.success)
}

/** `method` may be left out only when the application offers exactly one. */
export const resolveMethod = (
  method: Method | undefined,
  settings: ApplicationSettings
): Result.Result<Method, MethodRequired | MethodNotEnabled> => {
  if (method !== undefined) {
    return settings.methods.includes(method)
      ? Result.succeed(method)
      : Result.fail(new MethodNotEnabled({ message: `Method '${method}' is not enabled for this application` }))
  }
  const [only, ...others] = settings.methods
  if (only === undefined) {
    return Result.fail(new MethodNotEnabled({ message: "The application has no payment method enabled" }))
  }
  if (others.length > 0) {
    return Result.fail(
      new MethodRequired({ message: `method is required; the application offers ${settings.methods.join(", ")}` })
    )
  }
  return Result.succeed(only)
}

/** The application's bounds, inclusive. */
export const checkAmount = (
  amount: number,
  settings: ApplicationSettings
): Result.Result<number, AmountBelowMinimum | AmountAboveMaximum> => {
  if (amount < settings.min_amount) {
    return Result.fail(
      new AmountBelowMinimum({
        message: `amount is below the application's minimum of ${settings.min_amount}`,
        min_amount: settings.min_amount
      })
    )
  }
  if (amount > settings.max_amount) {
    return Result.fail(
      new AmountAboveMaximum({
        message: `amount is above the application's maximum of ${settings.max_amount}`,
        max_amount: settings.max_amount
      })
    )
  }
  return Result.succeed(amount)
}

/**
 * The return URL's host must equal the registered host, case-insensitively. A registered host with a port
 * (`shop.example:8443`) must match host and port; without one it matches the host name on any port.
 * No registered host means no return URL is allowed.
 */
export const checkReturnUrl = (
  returnUrl: string | null,
  settings: ApplicationSettings
): Result.Result<string | null, ReturnUrlNotAllowed> => {
  if (returnUrl === null) return Result.succeed(null)
  const registered = settings.return_url_host?.toLowerCase()
  const url = new URL(returnUrl)
  const matches = registered !== undefined && (registered === url.host.toLowerCase() || registered === url.hostname)
  return matches
    ? Result.succeed(returnUrl)
    : Result.fail(
        new ReturnUrlNotAllowed({
          message:
            registered === undefined
              ? "The application has no registered return-URL host"
              : `return_url host must be ${registered}`
        })
      )
}

/** The rules after the body's shape, in the contract's order (its fields are valid and its currency offered). */
const applyRules = (
  input: CreatePaymentBody,
  settings: ApplicationSettings
): Result.Result<PaymentDraft, CreateRejection> =>
  Result.gen(function* () {
    const method = yield* resolveMethod(input.method, settings)
    const amount = yield* checkAmount(input.amount, settings)
    const returnUrl = yield* checkReturnUrl(input.return_url ?? null, settings)
    // The currency rule guarantees a currency when the body names none: the application's first.
    const currency = input.currency ?? (settings.currencies[0] as Currency)
    return {
      amount,
      currency,
      method,
      order_reference: input.order_reference,
      description: input.description ?? null,
      customer: {
        name: input.customer?.name ?? null,
        email: input.customer?.email ?? null,
        phone: input.customer?.phone ?? null
      },
      locale: input.locale ?? settings.locale,
      return_url: returnUrl,
      metadata: input.metadata ?? {}
    }
  })

/** Applies every create rule that needs no stored payments, in the contract's order, to a body as sent. */
export const decide = (body: unknown, settings: ApplicationSettings): Result.Result<PaymentDraft, CreateRejection> =>
  Result.flatMap(validateFields(body, settings), (input) => applyRules(input, settings))

/**
 * The same rules for a body the API has already decoded with `CreatePaymentBody` (the server's create handler), so
 * it is decoded once: only the currency rule of the field checks is left, then the rest. For every body,
 * `decide(body)` and `decideBody(decoded body)` answer alike (a property test holds them together).
 */
export const decideBody = (
  input: CreatePaymentBody,
  settings: ApplicationSettings
): Result.Result<PaymentDraft, CreateRejection> => {
  const offered = currencyErrors(input.currency, settings)
  return Object.keys(offered).length > 0
    ? Result.fail(validationFailed(Object.assign(emptyFields<ReadonlyArray<string>>(), offered) as FieldErrors))
    : applyRules(input, settings)
}

/** Rule 5: an order reference with a pending, paid or refunded payment cannot be used again. */
export const checkOrderReference = (
  blocking: { readonly id: string } | null
): Result.Result<void, OrderReferenceAlreadyPaid> =>
  blocking === null
    ? Result.void
    : Result.fail(
        new OrderReferenceAlreadyPaid({
          message: "This order_reference already has a pending, paid or refunded payment",
          payment_id: blocking.id
        })
      )

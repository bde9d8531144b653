/** The merchant API through the SDK (`Kassa`), its answers as JSON, its errors as `CommandFailure`s. */
import type { Kassa, KassaPayment } from "@kassa/client"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { CommandFailure, failure, fields, money, table } from "./Output.ts"

type Sdk = typeof import("@kassa/client")

export interface MerchantSettings {
  readonly apiKey: Redacted.Redacted<string>
  readonly baseUrl: string
}

// What an API error carries besides its own fields; everything else is a field of its code.
const commonKeys = new Set(["message", "status", "requestId", "retryAfter", "cause", "_tag", "code", "name", "stack"])

/** An SDK error as the CLI reports it: the code, the message, the code's fields and the Request-Id. */
export const toFailure = (sdk: Sdk, error: unknown): CommandFailure => {
  if (error instanceof sdk.KassaApiError) {
    const own = Object.fromEntries(Object.entries(error).filter(([key]) => !commonKeys.has(key)))
    return failure(error.message, {
      code: error.code,
      status: error.status,
      ...own,
      ...(error.retryAfter === undefined ? {} : { retry_after: error.retryAfter }),
      request_id: error.requestId ?? null
    })
  }
  if (error instanceof sdk.KassaError) return failure(error.message, { code: error.code })
  return failure(error instanceof Error ? error.message : String(error))
}

/**
 * Calls the SDK; its errors become `CommandFailure`s. The SDK is loaded on the first call, so commands that do not
 * call the merchant API (and usage errors) start without it.
 */
export const call = <A>(settings: MerchantSettings, f: (kassa: Kassa) => Promise<A>) =>
  Effect.tryPromise({
    try: async () => {
      const sdk = await import("@kassa/client")
      try {
        return await f(new sdk.Kassa({ apiKey: Redacted.value(settings.apiKey), baseUrl: settings.baseUrl }))
      } catch (error) {
        throw toFailure(sdk, error)
      }
    },
    catch: (error) =>
      error instanceof CommandFailure ? error : failure(error instanceof Error ? error.message : String(error))
  })

export const renderPayment = (payment: KassaPayment): string => {
  const lines = fields([
    ["ID", payment.id],
    ["Status", payment.status],
    ["Mode", payment.mode],
    ["Amount", money(payment.amount, payment.currency)],
    ["Refunded", money(payment.refunded_amount, payment.currency)],
    ["Order reference", payment.order_reference],
    ["Description", payment.description],
    ["Method", payment.method],
    ["Checkout URL", payment.checkout_url],
    ["Expires at", payment.expires_at],
    ["Paid at", payment.paid_at],
    ["Created at", payment.created_at]
  ])
  if (payment.refunds.length === 0) return lines
  const refunds = table(
    [
      ["id", "Refund"],
      ["amount", "Amount"],
      ["status", "Status"],
      ["reason", "Reason"],
      ["created_at", "Created at"]
    ],
    payment.refunds.map((refund) => ({ ...refund, amount: money(refund.amount, payment.currency) }))
  )
  return `${lines}\n\n${refunds}`
}

export const renderPayments = (payments: ReadonlyArray<KassaPayment>, hasMore: boolean): string => {
  if (payments.length === 0) return "No payments."
  const rows = table(
    [
      ["id", "ID"],
      ["status", "Status"],
      ["amount", "Amount"],
      ["order_reference", "Order reference"],
      ["mode", "Mode"],
      ["created_at", "Created at"]
    ],
    payments.map((payment) => ({ ...payment, amount: money(payment.amount, payment.currency) }))
  )
  const last = payments[payments.length - 1]
  return hasMore && last !== undefined ? `${rows}\n\nMore payments follow: --starting-after ${last.id}` : rows
}

/**
 * The filters of the dashboards' lists, read from the query string their GET forms send. A value that is not one
 * of the filter's choices (hand-edited URL, stale bookmark) is no filter at all, never an error page. The payment
 * search's filters are read here once for its two lists and their CSV exports.
 */
import { Delivery, Ids, Mode, Money, Payment, Text, WebhookEvent } from "@kassa/core"
import { Option, Schema } from "effect"
import type { PaymentFilterErrors, PaymentFilterForm } from "../pages/dashboard/PaymentFilterFields.ts"
import type { PaymentSearchQuery } from "./PaymentSearch.ts"

/**
 * A query parameter as typed: trimmed, at most `max` characters, "" when absent. U+0000 and unpaired surrogates
 * (which the database refuses in a query) become U+FFFD: a filter naming them matches nothing, as nothing stored
 * holds them, instead of failing the page.
 */
export const param = (query: URLSearchParams, name: string, max = 200): string =>
  Text.toStorable((query.get(name) ?? "").trim().slice(0, max))

const choice =
  <A extends string>(is: (u: unknown) => u is A) =>
  (query: URLSearchParams, name: string): A | undefined => {
    const value = param(query, name)
    return is(value) ? value : undefined
  }

export const mode = choice(Schema.is(Mode.Mode))
export const paymentStatus = choice(Schema.is(Payment.PaymentStatus))
export const eventName = choice(Schema.is(WebhookEvent.EventName))
export const deliveryStatus = choice(Schema.is(Delivery.DeliveryStatus))

/** What a payment search's form asks for. */
export interface PaymentFilters {
  readonly search: Omit<PaymentSearchQuery, "limit" | "applicationId" | "startingAfter">
  readonly form: PaymentFilterForm
  /** Values that are no filter, with why (shown next to their fields; the search runs without them). */
  readonly errors: PaymentFilterErrors
}

const parsePaymentId = Schema.decodeUnknownOption(Ids.PaymentId)

const dayPattern = /^(\d{4})-(\d{2})-(\d{2})$/

/** Midnight UTC starting `YYYY-MM-DD`, if it is a day of the calendar (`2026-02-30` is not). */
export const utcDay = (text: string): Date | undefined => {
  const match = dayPattern.exec(text)
  if (match === null) return undefined
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])))
  return date.toISOString().slice(0, 10) === text ? date : undefined
}

const dayMillis = 86_400_000

/**
 * An amount bound as typed: with a currency, in its major unit with at most its decimals (`12.50` EUR, `1000` JPY:
 * Money.fromDecimalString: `.` is the decimal point, no grouping — `12,50` is refused rather than read as 1250);
 * without one, an integer of minor units. Anything else is no bound.
 */
const amountOf = (text: string, currency: string | undefined): number | undefined => {
  const amount =
    currency === undefined ? (/^\d{1,16}$/.test(text) ? Number(text) : null) : Money.fromDecimalString(text, currency)
  return amount !== null && Number.isSafeInteger(amount) ? amount : undefined
}

const notADay = "Not a date (YYYY-MM-DD): not used."

/**
 * The payment search's filters from a list's or export's query string. A value that cannot be a filter is none
 * (and named in `errors`), never an error page — except a malformed payment id, which no payment has: that search
 * finds nothing, as an id that does not exist would.
 */
export const paymentFilters = (query: URLSearchParams): PaymentFilters => {
  const errors: Partial<Record<keyof PaymentFilterForm, string>> = {}
  const paymentIdText = param(query, "payment_id", 100).toLowerCase()
  const paymentId = Option.getOrUndefined(parsePaymentId(paymentIdText))
  if (paymentIdText !== "" && paymentId === undefined)
    errors.payment_id = "A payment id is a UUID, like 7d4f0c7e-1b2a-4c3d-9e8f-0a1b2c3d4e5f."
  const reference = param(query, "order_reference", 255)
  const match = param(query, "match") === "prefix" ? "prefix" : "exact"
  const email = param(query, "customer_email", 320)
  const createdFromText = param(query, "created_from", 10)
  const createdToText = param(query, "created_to", 10)
  const createdFrom = utcDay(createdFromText)
  const createdTo = utcDay(createdToText)
  if (createdFromText !== "" && createdFrom === undefined) errors.created_from = notADay
  if (createdToText !== "" && createdTo === undefined) errors.created_to = notADay
  const currencyText = param(query, "currency", 10).toUpperCase()
  const currency = /^[A-Z]{3}$/.test(currencyText) ? currencyText : undefined
  if (currencyText !== "" && currency === undefined) errors.currency = "A currency is three letters, like EUR."
  const amountMinText = param(query, "amount_min", 40)
  const amountMaxText = param(query, "amount_max", 40)
  const amountMin = amountOf(amountMinText, currency)
  const amountMax = amountOf(amountMaxText, currency)
  const notAnAmount =
    currency === undefined
      ? "Not an amount in minor units (1250 for 12.50): not used."
      : `Not an amount in ${currency} (12.50, at most ${Money.minorUnitDigits(currency)} decimals): not used.`
  if (amountMinText !== "" && amountMin === undefined) errors.amount_min = notAnAmount
  if (amountMaxText !== "" && amountMax === undefined) errors.amount_max = notAnAmount
  const status = paymentStatus(query, "status")
  const mode_ = mode(query, "mode")
  return {
    search: {
      paymentId,
      matchesNothing: paymentIdText !== "" && paymentId === undefined,
      orderReference: reference === "" ? undefined : reference,
      prefix: match === "prefix",
      customerEmail: email === "" ? undefined : email.toLowerCase(),
      createdFrom,
      createdBefore: createdTo === undefined ? undefined : new Date(createdTo.getTime() + dayMillis),
      currency,
      amountMin,
      amountMax,
      status,
      mode: mode_
    },
    form: {
      payment_id: paymentIdText,
      order_reference: reference,
      match,
      customer_email: email,
      created_from: createdFromText,
      created_to: createdToText,
      currency: currencyText,
      amount_min: amountMinText,
      amount_max: amountMaxText,
      status: status ?? "",
      mode: mode_ ?? ""
    },
    errors
  }
}

/** Whether any filter is set (the match choice alone is none). */
export const anyPaymentFilter = (form: PaymentFilterForm): boolean =>
  Object.entries(form).some(([name, value]) => name !== "match" && value !== "")

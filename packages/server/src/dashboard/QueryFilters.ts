/**
 * The filters of the dashboards' lists, read from the query string their GET forms send. A value that is not one
 * of the filter's choices (hand-edited URL, stale bookmark) is no filter at all, never an error page.
 */
import { Delivery, Mode, Payment, Text, WebhookEvent } from "@kassa/core"
import { Schema } from "effect"

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

/**
 * Mollie's words in Kassa's (decisions §11): locales, methods, amounts as strings, a payment's and a refund's
 * reading, how an SDK failure is sorted, and Mollie's list pages. Helpers of {@link MollieConnector} only, kept apart
 * so the connector stays one screenful of calls.
 */
import { Ids, Money, type ProviderSettlement } from "@kassa/core"
import { DateTime, Duration, Effect, Option, Schema } from "effect"
import type * as MollieModels from "mollie-api-typescript/models"
import type * as MollieErrors from "mollie-api-typescript/models/errors"
import {
  type CheckoutReading,
  type NoAnswer,
  noAnswer,
  ProviderRefused,
  type RefundReading
} from "../ProviderConnector.ts"

export type Payment = MollieModels.PaymentResponse | MollieModels.ListPaymentResponse
export type Refund = MollieModels.RefundResponse | MollieModels.ListRefundResponse

/**
 * Mollie decides when an open payment expires (`expiresAt` is read-only, mollie.md §1), so nothing Kassa sends is
 * clamped by this window; it only has to admit any `expires_at` a payment can have.
 */
export const checkoutWindow = { min: Duration.zero, max: Duration.days(366) }

/** Mollie's locales (mollie.md §10, [spec] `locale`), and each language's usual country among them. */
const mollieLocales = new Set(
  "ca_ES cs_CZ da_DK de_AT de_CH de_DE de_LU en_BE en_GB en_NL en_US es_ES fi_FI fr_BE fr_FR fr_LU hu_HU is_IS it_IT lt_LT lv_LV nb_NO nl_BE nl_NL pl_PL pt_PT sk_SK sv_SE".split(
    " "
  )
)
const usualCountry: Readonly<Record<string, string>> = {
  ca: "ca_ES",
  cs: "cs_CZ",
  da: "da_DK",
  de: "de_DE",
  en: "en_US",
  es: "es_ES",
  fi: "fi_FI",
  fr: "fr_FR",
  hu: "hu_HU",
  is: "is_IS",
  it: "it_IT",
  lt: "lt_LT",
  lv: "lv_LV",
  nb: "nb_NO",
  nl: "nl_NL",
  pl: "pl_PL",
  pt: "pt_PT",
  sk: "sk_SK",
  sv: "sv_SE"
}

/**
 * Kassa's `ll` or `ll-CC` as Mollie's `ll_CC`: the pair itself when Mollie has it (`nl-NL` → `nl_NL`), else the
 * language's usual country (`en`, `en-AU` → `en_US`), else none (Mollie picks from the browser).
 */
export const mollieLocale = (locale: string): string | undefined => {
  const pair = locale.replace("-", "_")
  if (mollieLocales.has(pair)) return pair
  return usualCountry[locale.split("-")[0] ?? ""]
}

/** Mollie's method names (the SDK's `MethodEnum`, [spec] `method`). */
const mollieMethods = new Set([
  "alma",
  "applepay",
  "bacs",
  "bancomatpay",
  "bancontact",
  "banktransfer",
  "belfius",
  "billie",
  "billink",
  "bizum",
  "blik",
  "creditcard",
  "directdebit",
  "eps",
  "giftcard",
  "ideal",
  "in3",
  "kbc",
  "klarna",
  "mbway",
  "mobilepay",
  "multibanco",
  "mybank",
  "paybybank",
  "paypal",
  "paysafecard",
  "pointofsale",
  "przelewy24",
  "riverty",
  "satispay",
  "swish",
  "trustly",
  "twint",
  "vipps",
  "voucher"
])
/** Kassa's names (and Stripe's, which operators may have configured first) that Mollie spells otherwise. */
const methodAliases: Readonly<Record<string, string>> = {
  card: "creditcard",
  apple_pay: "applepay",
  sepa_debit: "directdebit",
  bank_transfer: "banktransfer",
  p24: "przelewy24"
}

/** Kassa's method as Mollie's (`card` → `creditcard`), or undefined for one Mollie does not have. */
export const mollieMethod = (method: string): MollieModels.MethodEnum | undefined => {
  const name = methodAliases[method] ?? method
  return mollieMethods.has(name) ? (name as MollieModels.MethodEnum) : undefined
}

/** Mollie's `{currency, value}` from minor units (the core's money rules; never a float). */
export const mollieAmount = (amount: number, currency: string): MollieModels.Amount => ({
  currency,
  value: Money.toDecimalString(amount, currency)
})

/** Mollie's amount in minor units; a value that is not one is a broken answer, not something to guess at. */
const minorUnits = (amount: { readonly currency: string; readonly value: string } | null | undefined): number => {
  if (amount === null || amount === undefined) return 0
  const minor = Money.fromDecimalString(amount.value, amount.currency)
  if (minor === null) throw new Error(`Mollie sent an amount Kassa cannot read: ${JSON.stringify(amount)}`)
  return minor
}

export const instant = (text: string | null | undefined): DateTime.Utc | null =>
  text === null || text === undefined ? null : Option.getOrNull(DateTime.make(text))

/** A payment as Mollie shows it now, in the core's vocabulary (decisions §11's table). */
export const checkoutReading = (payment: Payment): CheckoutReading => {
  const reading = (state: ProviderSettlement.CheckoutState, awaitingCapture = false): CheckoutReading => ({
    _tag: "Checkout",
    state,
    // Mollie's checkout is its payment: one id for both.
    providerPaymentId: payment.id,
    providerStatus: payment.status,
    providerExpiresAt: instant(payment.expiresAt),
    chargedBack: minorUnits(payment.amountChargedBack),
    awaitingCapture
  })
  switch (payment.status) {
    case "paid": {
      const details = payment.details ?? {}
      return reading({
        _tag: "Paid",
        customer: {
          name: details.consumerName ?? details.cardHolder ?? null,
          // PayPal's `consumerAccount` is the payer's e-mail; other methods' is an IBAN (mollie.md §2).
          email: payment.method === "paypal" ? (details.consumerAccount ?? null) : null,
          phone: null
        }
      })
    }
    case "failed":
      return reading({ _tag: "Failed" })
    case "canceled":
      return reading({ _tag: "Cancelled" })
    case "expired":
      return reading({ _tag: "Expired" })
    // A capture Kassa does not make (Klarna, in3, Billie…): pending, and listed among the discrepancies.
    case "authorized":
      return reading({ _tag: "Open" }, true)
    default:
      return reading({ _tag: "Open" })
  }
}

/** Mollie's refund statuses (mollie.md §5) in the core's: `queued`, `pending`, `processing` are all still pending. */
const refundStatus = (status: string): ProviderSettlement.ProviderRefundStatus =>
  status === "refunded" ? "succeeded" : status === "failed" || status === "canceled" ? status : "pending"

const decodeRefundId = Schema.decodeUnknownOption(Ids.RefundId)

/** A Mollie refund in the core's vocabulary; Kassa's id from its metadata, else `unknownAs` (dashboard refunds). */
export const refundReading = (refund: Refund, unknownAs: Ids.RefundId): RefundReading => {
  const metadata = refund.metadata
  const kassaId =
    typeof metadata === "object" && metadata !== null && !Array.isArray(metadata)
      ? Option.getOrNull(decodeRefundId((metadata as Record<string, unknown>).kassa_refund_id))
      : null
  return {
    _tag: "Refund",
    kassaMade: kassaId !== null,
    providerPaymentId: refund.paymentId ?? null,
    refund: {
      refund_id: kassaId ?? unknownAs,
      provider_refund_id: refund.id,
      amount: minorUnits(refund.amount),
      status: refundStatus(refund.status),
      created_at: instant(refund.createdAt) ?? DateTime.makeUnsafe(0)
    }
  }
}

/** Mollie's words for its duplicate-refund 409, as an operator should read them (decisions §11, "Refunds"). */
export const duplicateRefundMessage =
  "Mollie refused this refund as a duplicate: it refuses a second refund of the same amount on the same payment " +
  "within an hour. Wait an hour, or refund a different amount."

const keyRefusal = (status: number, detail: string) =>
  new ProviderRefused({
    message:
      status === 403
        ? `Mollie refused the key for this request (${detail}). Kassa needs an API key (live_… or test_…), not an organization token.`
        : `Mollie refused the key: ${detail}`,
    field: "secret_key",
    code: null,
    status
  })

/**
 * Mollie's error body (`{status, title, detail, field?}`, mollie.md §8): the SDK decodes it only for the statuses an
 * operation lists (404, 422, 429…), so for the others (400, 401, 409 on some calls) it is read from the raw body.
 */
const errorBody = (
  errors: ErrorClasses,
  error: MollieErrors.ClientError
): { readonly detail: string; readonly field: string | null } => {
  if (error instanceof errors.ErrorResponse) return { detail: error.detail, field: error.field ?? null }
  try {
    const body: unknown = JSON.parse(error.body)
    if (typeof body === "object" && body !== null) {
      const { detail, field } = body as Record<string, unknown>
      return {
        detail: typeof detail === "string" ? detail : `HTTP ${error.statusCode}`,
        field: typeof field === "string" ? field : null
      }
    }
  } catch {
    // Not Mollie's JSON (a proxy's page): the status says enough.
  }
  return { detail: `HTTP ${error.statusCode}`, field: null }
}

/** Sorts an SDK failure into "no answer" (a success value) or a refusal. Anything else is a defect. */
/** The SDK's error classes, loaded with it (the connector imports the SDK on first use). */
export type ErrorClasses = typeof MollieErrors

export const classify =
  (errors: ErrorClasses, operation: "refund" | "other") =>
  (error: unknown): Effect.Effect<NoAnswer, ProviderRefused> => {
    if (error instanceof errors.RequestAbortedError || error instanceof errors.RequestTimeoutError) {
      return Effect.succeed(noAnswer("timeout"))
    }
    if (error instanceof errors.ConnectionError || error instanceof errors.UnexpectedClientError) {
      return Effect.succeed(noAnswer("unavailable"))
    }
    if (!(error instanceof errors.ClientError)) return Effect.die(error)
    const status = error.statusCode
    const { detail, field } = errorBody(errors, error)
    if (status === 429) return Effect.succeed(noAnswer("rate_limited"))
    // A 2xx the SDK could not read (ResponseValidationError) or a 5xx: Mollie may have acted, so ask again later.
    if (status < 400 || status >= 500) return Effect.succeed(noAnswer("unavailable"))
    if (status === 401 || status === 403) return Effect.fail(keyRefusal(status, detail))
    if (status === 409) {
      // A duplicate refund (the same amount within an hour, mollie.md §5) is a refusal; any other 409 is a request
      // with the same Idempotency-Key still running (mollie.md §6): no answer yet.
      if (operation === "refund" && /duplicate/i.test(detail)) {
        return Effect.fail(new ProviderRefused({ message: duplicateRefundMessage, field, code: "duplicate", status }))
      }
      return Effect.succeed(noAnswer("unavailable"))
    }
    return Effect.fail(
      new ProviderRefused({ message: `Mollie refused the request: ${detail}`, field, code: null, status })
    )
  }

/** The `from` cursor of a list's next page (Mollie's `_links.next.href`), or null on the last page. */
const nextFrom = (links: MollieModels.ListLinks): string | null => {
  const href = links.next?.href
  return href === undefined ? null : (URL.parse(href)?.searchParams.get("from") ?? null)
}

/** A list's pages, at most `pages` of 250 (Mollie's largest page, mollie.md §5), until `enough` says stop. */
export const pagesOf = async <A>(
  page: (
    from: string | undefined
  ) => Promise<{ readonly items: ReadonlyArray<A>; readonly links: MollieModels.ListLinks }>,
  enough: (item: A) => boolean,
  pages = 10
): Promise<Array<A>> => {
  const items: Array<A> = []
  let from: string | undefined
  for (let index = 0; index < pages; index++) {
    const answer = await page(from)
    for (const item of answer.items) {
      if (enough(item)) return items
      items.push(item)
    }
    const next = nextFrom(answer.links)
    if (next === null) break
    from = next
  }
  return items
}

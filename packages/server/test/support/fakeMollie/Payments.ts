/**
 * Payments (`POST/GET/DELETE /v2/payments…`): what a create accepts, how long an open payment lives, when it can be
 * cancelled, and the status changes a customer (the test checkout) or a test makes. Sources: research mollie.md §1–3
 * ([spec] = mollie/openapi, [old] = mollie/api-documentation).
 */

import type { Profile } from "./Profiles.ts"
import {
  amountOf,
  type Clock,
  type JsonObject,
  link,
  MollieFailure,
  minorOf,
  notFound,
  randomId,
  unprocessable
} from "./Shapes.ts"

export type PaymentStatus = "open" | "pending" | "authorized" | "paid" | "canceled" | "expired" | "failed"

/** Final statuses (https://docs.mollie.com/docs/status-change). */
export const finalStatuses: ReadonlySet<string> = new Set(["paid", "canceled", "expired", "failed"])

export interface StoredPayment {
  readonly id: string
  readonly profile: Profile
  readonly currency: string
  readonly minor: number
  /** Refunded (pending ones included, as Mollie deducts at creation) and charged back, in cents. */
  refunded: number
  chargedBack: number
  object: JsonObject
}

/** Open payment lifetimes by method ([old] payments/status-changes.rst; read from `expiresAt`, never assumed). */
const lifetimeMinutes: Readonly<Record<string, number>> = {
  ideal: 15,
  creditcard: 30,
  bancontact: 60,
  paypal: 72 * 60,
  klarna: 48 * 60,
  banktransfer: 12 * 24 * 60
}

/** Locales a create accepts ([spec] `locale`; mollie.md §10). */
const locales = new Set(
  "ca_ES cs_CZ da_DK de_AT de_CH de_DE de_LU en_BE en_GB en_NL en_US es_ES fi_FI fr_BE fr_FR fr_LU hu_HU is_IS it_IT lt_LT lv_LV nb_NO nl_BE nl_NL pl_PL pt_PT sk_SK sv_SE".split(
    " "
  )
)

/** Fields a create with an API key accepts; `testmode` and `profileId` are refused (mollie.md §7, mollie-api-node#477). */
const createFields = new Set([
  "amount",
  "description",
  "redirectUrl",
  "cancelUrl",
  "webhookUrl",
  "locale",
  "method",
  "metadata",
  "sequenceType",
  "billingAddress",
  "captureMode"
])

/** Payer details by method, once paid (mollie.md §2, [node] src/data/payments/data.ts). */
const paidDetails = (method: string, payer: { readonly name: string; readonly email: string }): JsonObject => {
  switch (method) {
    case "creditcard":
      return { cardHolder: payer.name, cardNumber: "6787", cardLabel: "Mastercard", cardCountryCode: "NL" }
    case "paypal":
      return { consumerName: payer.name, consumerAccount: payer.email, paypalPayerId: "WDJJHEBZ4X2LY" }
    default:
      return { consumerName: payer.name, consumerAccount: "NL53INGB0654422370", consumerBic: "INGBNL2A" }
  }
}

export interface Payments {
  readonly create: (profile: Profile, body: JsonObject) => StoredPayment
  readonly get: (profile: Profile, id: string) => StoredPayment
  readonly find: (id: string) => StoredPayment | undefined
  /** The profile's payments, newest first. */
  readonly list: (profile: Profile) => ReadonlyArray<StoredPayment>
  readonly cancel: (profile: Profile, id: string) => StoredPayment
  /** Moves a payment to `status` (the test checkout's choice, or a test's). */
  readonly setStatus: (
    id: string,
    status: PaymentStatus,
    payer?: { readonly name?: string; readonly email?: string }
  ) => StoredPayment
  /** Open payments past `expiresAt` become `expired`, as Mollie does. */
  readonly expireDue: () => void
  readonly recompute: (payment: StoredPayment) => void
  readonly all: () => ReadonlyArray<StoredPayment>
}

export const makePayments = (options: {
  readonly clock: Clock
  readonly base: string
  /** Called after every status change Mollie calls the webhook for. */
  readonly changed: (payment: StoredPayment) => void
  /** Mollie refuses a `webhookUrl` it cannot reach, localhost included (mollie.md §1, mollie/magento2#460). */
  readonly refuseLocalWebhookUrl: () => boolean
}): Payments => {
  const { clock, base, changed } = options
  const payments: Array<StoredPayment> = []
  const byId = new Map<string, StoredPayment>()

  /** Refund fields exist only while the payment is refundable; `isCancelable` only until final ([spec] entity-payment). */
  const recompute = (payment: StoredPayment) => {
    const object = { ...payment.object }
    const status = String(object.status)
    if (finalStatuses.has(status)) {
      delete object.isCancelable
      delete object.expiresAt
    }
    if (status === "paid") {
      object.amountRefunded = amountOf(payment.refunded, payment.currency)
      object.amountRemaining = amountOf(payment.minor - payment.refunded - payment.chargedBack, payment.currency)
    } else {
      delete object.amountRefunded
      delete object.amountRemaining
    }
    if (payment.chargedBack > 0) object.amountChargedBack = amountOf(payment.chargedBack, payment.currency)
    payment.object = object
  }

  const get = (profile: Profile, id: string) => {
    const payment = byId.get(id)
    if (payment === undefined || payment.profile !== profile) throw notFound("payment")
    return payment
  }

  const setStatus: Payments["setStatus"] = (id, status, payer = {}) => {
    const payment = byId.get(id)
    if (payment === undefined) throw new Error(`no payment ${id}`)
    const object: JsonObject = { ...payment.object, status }
    const at = clock.iso()
    if (status === "paid") {
      object.paidAt = at
      object.details = paidDetails(String(object.method ?? "ideal"), {
        name: payer.name ?? "T. TEST",
        email: payer.email ?? "payer@example.com"
      })
    }
    if (status === "canceled") object.canceledAt = at
    if (status === "expired") object.expiredAt = at
    if (status === "failed") object.failedAt = at
    if (status === "authorized") object.authorizedAt = at
    payment.object = object
    recompute(payment)
    // The webhook is called for these, not for `open` or `pending` (mollie.md §4, [old] overview/webhooks.rst).
    if (status !== "open" && status !== "pending") changed(payment)
    return payment
  }

  return {
    create: (profile, body) => {
      for (const field of Object.keys(body)) {
        if (!createFields.has(field))
          throw unprocessable(`Non-existent body parameter "${field}" for this API call.`, field)
      }
      const amount = minorOf(body.amount)
      if (amount === null || amount.minor < 1) {
        throw unprocessable("The amount contains an invalid value or has the wrong number of decimals.", "amount.value")
      }
      if (typeof body.description !== "string" || body.description === "") {
        throw unprocessable("The description is invalid.", "description")
      }
      if (typeof body.redirectUrl !== "string" || URL.parse(body.redirectUrl) === null) {
        throw unprocessable("The redirect URL is invalid.", "redirectUrl")
      }
      const webhook = body.webhookUrl
      if (webhook !== undefined && webhook !== null) {
        const url = typeof webhook === "string" ? URL.parse(webhook) : null
        const local = url !== null && /^(localhost|127\.|\[::1\])/.test(url.hostname)
        if (url === null || (local && options.refuseLocalWebhookUrl())) {
          throw unprocessable(
            "The webhook URL is invalid because it is unreachable from Mollie's point of view.",
            "webhookUrl"
          )
        }
      }
      if (body.locale !== undefined && !locales.has(String(body.locale))) {
        throw unprocessable("The locale is invalid.", "locale")
      }
      const method = body.method === undefined || body.method === null ? null : String(body.method)
      if (method !== null && !profile.methods.has(method)) {
        throw unprocessable("The payment method is not active in your website profile.", "method")
      }
      // iDEAL is EUR only (https://docs.mollie.com/docs/ideal).
      if (method === "ideal" && amount.currency !== "EUR") {
        throw unprocessable("The currency is not supported by the payment method.", "amount.currency")
      }
      const id = randomId("tr")
      const checkout = `${base}/checkout/test-mode/${id}`
      const minutes = method === null ? 15 : (lifetimeMinutes[method] ?? 60)
      const payment: StoredPayment = {
        id,
        profile,
        currency: amount.currency,
        minor: amount.minor,
        refunded: 0,
        chargedBack: 0,
        object: {
          resource: "payment",
          id,
          mode: profile.mode,
          createdAt: clock.iso(),
          amount: amountOf(amount.minor, amount.currency),
          description: body.description,
          method,
          metadata: body.metadata ?? null,
          status: "open",
          // Only open bank transfers (and direct debits not yet submitted) can be cancelled (mollie.md §3: a Mollie
          // staff member in mollie/api-documentation#675; mollie/mollie-api-php#307).
          isCancelable: method === "banktransfer",
          expiresAt: clock.iso(minutes * 60_000),
          profileId: profile.id,
          sequenceType: "oneoff",
          redirectUrl: body.redirectUrl,
          cancelUrl: body.cancelUrl ?? null,
          webhookUrl: webhook ?? null,
          ...(body.locale === undefined ? {} : { locale: body.locale }),
          _links: {
            self: link(`${base}/v2/payments/${id}`),
            checkout: link(checkout, "text/html"),
            dashboard: link(`https://my.mollie.com/dashboard/payments/${id}`, "text/html"),
            documentation: link("https://docs.mollie.com/reference/create-payment", "text/html")
          }
        }
      }
      payments.push(payment)
      byId.set(id, payment)
      return payment
    },
    get,
    find: (id) => byId.get(id),
    list: (profile) => payments.filter((payment) => payment.profile === profile).reverse(),
    cancel: (profile, id) => {
      const payment = get(profile, id)
      // 422 "The payment cannot be cancelled" unless `isCancelable` (mollie.md §3, [spec], mollie-api-node#477).
      if (payment.object.isCancelable !== true) {
        throw new MollieFailure(422, "Unprocessable Entity", "The payment cannot be cancelled")
      }
      return setStatus(id, "canceled")
    },
    setStatus,
    expireDue: () => {
      const now = clock.now()
      for (const payment of payments) {
        const status = String(payment.object.status)
        if ((status === "open" || status === "pending") && Date.parse(String(payment.object.expiresAt)) <= now) {
          setStatus(payment.id, "expired")
        }
      }
    },
    recompute,
    all: () => payments
  }
}

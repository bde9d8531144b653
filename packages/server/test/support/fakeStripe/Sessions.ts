/**
 * Checkout Sessions: created by the API, completed by the customer (the hosted page or the test's `pay`), expired by
 * the API or by Stripe's clock, and settled later when paid with a delayed method.
 */
import { type Account, find, type Stored } from "./Accounts.ts"
import type { Clock } from "./Clock.ts"
import { type EventRequest, type Events, noRequest } from "./Events.ts"
import { invalidRequest, missing } from "./Failures.ts"
import { fixture, randomId } from "./Fixtures.ts"
import { clone, isObject, type Json, type JsonObject } from "./Json.ts"
import type { PaymentIntents } from "./PaymentIntents.ts"

/** Stripe's checkout window: `expires_at` 30 minutes to 24 hours after creation (https://docs.stripe.com/api/checkout/sessions/create#create_checkout_session-expires_at). */
const minLifetime = 30 * 60
const maxLifetime = 24 * 60 * 60

/** Payment methods that complete a checkout before the money arrives (https://docs.stripe.com/payments/checkout/how-checkout-works#delayed-notification). */
const delayedMethods = new Set([
  "sepa_debit",
  "bacs_debit",
  "us_bank_account",
  "au_becs_debit",
  "acss_debit",
  "boleto",
  "konbini"
])

/**
 * Currencies of the methods whose Stripe page restricts them (each page's "Determine compatibility"): iDEAL
 * (https://docs.stripe.com/payments/ideal/accept-a-payment), Bancontact (https://docs.stripe.com/payments/bancontact/accept-a-payment),
 * EPS (https://docs.stripe.com/payments/eps/accept-a-payment) and SEPA Direct Debit take EUR only; Przelewy24 EUR and
 * PLN; BLIK PLN. Methods not listed take any currency here.
 */
const methodCurrencies: Readonly<Record<string, ReadonlyArray<string>>> = {
  ideal: ["eur"],
  bancontact: ["eur"],
  eps: ["eur"],
  sepa_debit: ["eur"],
  p24: ["eur", "pln"],
  blik: ["pln"]
}

/**
 * What a session offers of `allowed_payment_method_types`: since API version 2026-09-30 Stripe "filters the list to
 * only compatible payment methods based on other parameters such as `currency`", without an error, and shows the
 * subset (possibly empty) as the session's `payment_method_types`
 * (https://docs.stripe.com/changelog/endive/2026-09-30/remove-payment-method-types-checkout-sessions); a method the
 * account has not turned on is never eligible (https://docs.stripe.com/payments/payment-methods/dynamic-payment-methods).
 */
const offered = (account: Account, allowed: ReadonlyArray<Json>, currency: string): Array<Json> =>
  allowed.filter((method) => {
    const currencies = methodCurrencies[String(method)]
    return !account.disabledMethods.has(String(method)) && (currencies === undefined || currencies.includes(currency))
  })

/**
 * Stripe reads an empty form value as "unset this parameter" and refuses it for one that cannot be unset
 * (https://docs.stripe.com/error-codes#parameter-invalid-empty), with this message.
 */
const emptyValue = (param: string) =>
  invalidRequest(
    `You passed an empty string for '${param}'. We assume empty values are an attempt to unset a parameter; however '${param}' cannot be unset. You should remove '${param}' from your request or supply a non-empty value.`,
    { code: "parameter_invalid_empty", param }
  )

export interface Customer {
  readonly name?: string | null
  readonly email?: string | null
  readonly phone?: string | null
}

/** The session as the API shows it (without the fake's private keys). */
export const view = (session: JsonObject): JsonObject =>
  Object.fromEntries(Object.entries(session).filter(([key]) => !key.startsWith("~")))

/** Whether paying this session completes it before the money arrives. */
export const isDelayed = (session: JsonObject): boolean =>
  Array.isArray(session.payment_method_types) &&
  session.payment_method_types.some((method) => delayedMethods.has(String(method)))

export interface Sessions {
  /** Every session with its account, oldest first. */
  readonly stored: () => ReadonlyArray<Stored>
  readonly get: (id: string) => Stored | undefined
  /** The account's session, or Stripe's "No such checkout.session". */
  readonly find: (account: string, id: string) => Stored
  readonly create: (account: Account, params: JsonObject) => JsonObject
  readonly expanded: (account: string, session: JsonObject, params: JsonObject) => JsonObject
  readonly complete: (sessionId: string, customer: Customer, delayed: boolean) => JsonObject
  readonly expire: (stored: Stored, request: EventRequest) => void
  /** Expires the open sessions whose `expires_at` has come. */
  readonly expireDue: () => void
  readonly settleDelayed: (sessionId: string, outcome: "succeeded" | "failed") => JsonObject
}

export const makeSessions = (options: {
  readonly clock: Clock
  /** The fake's address, for the hosted page's `url`. */
  readonly base: string
  readonly events: Events
  readonly paymentIntents: PaymentIntents
}): Sessions => {
  const { clock, base, events, paymentIntents } = options
  const sessions = new Map<string, Stored>()

  const newSession = (account: Account, params: JsonObject): JsonObject => {
    if (params.mode === undefined) throw missing("mode")
    if (params.mode !== "payment") throw invalidRequest("The fake supports mode=payment only.", { param: "mode" })
    const items = params.line_items
    if (!Array.isArray(items) || items.length === 0) throw missing("line_items")
    let total = 0
    let currency: string | null = null
    items.forEach((item: Json, index: number) => {
      const price = isObject(item) ? item.price_data : undefined
      if (!isObject(item) || !isObject(price)) throw missing(`line_items[${index}][price_data]`)
      const unit = Number(price.unit_amount)
      const quantity = Number(item.quantity ?? 1)
      if (!Number.isInteger(unit) || unit < 0)
        throw invalidRequest("Invalid integer", { param: `line_items[${index}][price_data][unit_amount]` })
      const name = `line_items[${index}][price_data][product_data][name]`
      if (!isObject(price.product_data) || typeof price.product_data.name !== "string") throw missing(name)
      if (price.product_data.name === "") throw emptyValue(name)
      total += unit * quantity
      currency = String(price.currency)
    })
    if (params.success_url === undefined) throw missing("success_url")
    const now = clock.now
    const expiresAt = params.expires_at === undefined ? now + maxLifetime : Number(params.expires_at)
    if (!Number.isInteger(expiresAt) || expiresAt < now + minLifetime || expiresAt > now + maxLifetime) {
      throw invalidRequest(
        "The `expires_at` timestamp must be between 30 minutes and 24 hours from Checkout Session creation.",
        { param: "expires_at" }
      )
    }
    const id = randomId(account.livemode ? "cs_live" : "cs_test")
    // `allowed_payment_method_types` since stripe-node 23 / API 2026-09-30 (its CHANGELOG: `payment_method_types`
    // removed from Checkout.SessionCreateParams); the older name is still read for older API versions.
    const allowed = Array.isArray(params.allowed_payment_method_types)
      ? params.allowed_payment_method_types
      : Array.isArray(params.payment_method_types)
        ? params.payment_method_types
        : null
    const methods = allowed === null ? ["card"] : offered(account, allowed, String(currency))
    return {
      ...fixture("checkout.session"),
      id,
      after_expiration: null,
      amount_subtotal: total,
      amount_total: total,
      cancel_url: (params.cancel_url as Json) ?? null,
      client_reference_id: (params.client_reference_id as Json) ?? null,
      collected_information: null,
      created: now,
      currency,
      currency_conversion: null,
      // Filled when the customer completes the checkout (https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-customer_details).
      customer_details: null,
      customer_email: (params.customer_email as Json) ?? null,
      expires_at: expiresAt,
      livemode: account.livemode,
      locale: (params.locale as Json) ?? null,
      metadata: isObject(params.metadata) ? params.metadata : {},
      mode: "payment",
      // Created when the customer pays, not with the session (https://docs.stripe.com/changelog/2022-08-01).
      payment_intent: null,
      allowed_payment_method_types: allowed,
      payment_method_types: methods,
      payment_status: "unpaid",
      shipping_address_collection: null,
      shipping_cost: null,
      status: "open",
      success_url: params.success_url as Json,
      total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      url: `${base}/pay/${id}`,
      // Kept only to build the PaymentIntent's metadata on payment; not part of Stripe's session object.
      "~payment_intent_data": isObject(params.payment_intent_data) ? params.payment_intent_data : {}
    }
  }

  const expire = (stored: Stored, request: EventRequest) => {
    stored.object.status = "expired"
    // https://docs.stripe.com/api/checkout/sessions/expire: after it expires, nobody can complete it.
    events.emit(stored.account, "checkout.session.expired", view(stored.object), request)
  }

  return {
    stored: () => [...sessions.values()],
    get: (id) => sessions.get(id),
    find: (account, id) => find(sessions, id, account, "checkout.session", "session"),
    create: (account, params) => {
      const session = newSession(account, params)
      sessions.set(String(session.id), { account: account.id, object: session })
      return view(session)
    },
    /**
     * `expand[]=payment_intent` replaces the session's PaymentIntent id by the object, and
     * `expand[]=payment_intent.latest_charge` its charge too (https://docs.stripe.com/expand: nested fields after a
     * dot; https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-payment_intent and
     * https://docs.stripe.com/api/payment_intents/object#payment_intent_object-latest_charge are expandable). Other
     * expansions are refused, so a caller relying on one the fake lacks learns it.
     */
    expanded: (account, session, params) => {
      const expand = params.expand
      if (expand === undefined) return session
      const fields = Array.isArray(expand) ? expand.map(String) : [String(expand)]
      for (const field of fields) {
        if (field !== "payment_intent" && field !== "payment_intent.latest_charge") {
          throw invalidRequest(`This property cannot be expanded (${field}).`, { param: "expand" })
        }
      }
      const intentId = session.payment_intent
      if (typeof intentId !== "string") return session
      const intent = paymentIntents.get(intentId)
      if (intent === undefined || intent.account !== account) return session
      const charge = fields.includes("payment_intent.latest_charge") ? paymentIntents.charge(intent.charge) : undefined
      const object = clone(intent.object)
      return {
        ...session,
        payment_intent: charge === undefined ? object : { ...object, latest_charge: clone(charge.object) }
      }
    },
    complete: (sessionId, customer, delayed) => {
      const stored = sessions.get(sessionId)
      if (stored === undefined) throw new Error(`no session ${sessionId}`)
      const session = stored.object
      if (session.status !== "open") throw new Error(`session ${sessionId} is ${String(session.status)}, not open`)
      const account = stored.account
      const intentData = session["~payment_intent_data"]
      const metadata = isObject(intentData) && isObject(intentData.metadata) ? intentData.metadata : {}
      const paid = !delayed
      const intentId = paymentIntents.open(account, session, metadata, paid)
      const details = fixture("checkout.session").customer_details as JsonObject
      session.status = "complete"
      session.payment_status = paid ? "paid" : "unpaid"
      session.payment_intent = intentId
      session.customer_details = {
        ...details,
        email: customer.email ?? (session.customer_email as Json) ?? null,
        name: customer.name ?? null,
        phone: customer.phone ?? null
      }
      // https://docs.stripe.com/checkout/fulfillment: checkout.session.completed when the customer completes the
      // checkout, with payment_status telling whether the money arrived.
      events.emit(account, "checkout.session.completed", view(session), noRequest)
      return view(session)
    },
    expire,
    expireDue: () => {
      for (const stored of sessions.values()) {
        // https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-expires_at
        if (stored.object.status === "open" && Number(stored.object.expires_at) <= clock.now) {
          expire(stored, noRequest)
        }
      }
    },
    settleDelayed: (sessionId, outcome) => {
      const stored = sessions.get(sessionId)
      if (stored === undefined || stored.object.status !== "complete" || stored.object.payment_status !== "unpaid") {
        throw new Error(`session ${sessionId} is not awaiting a delayed payment`)
      }
      if (outcome === "succeeded") stored.object.payment_status = "paid"
      paymentIntents.settle(String(stored.object.payment_intent), outcome)
      // https://docs.stripe.com/payments/checkout/how-checkout-works#delayed-notification
      events.emit(stored.account, `checkout.session.async_payment_${outcome}`, view(stored.object), noRequest)
      return view(stored.object)
    }
  }
}

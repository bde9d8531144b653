/**
 * A stateful fake of the parts of Stripe's API that Kassa calls (decisions §10), for tests: Stripe cannot be reached
 * from here, and stripe-mock is stateless and Go-only (research/live-provider.md §2). It is reached through the
 * official `stripe` SDK (test/FakeStripe.test.ts is its contract with the SDK), over real HTTP on a local port.
 *
 * Objects are Stripe's own examples (FakeStripe.fixtures.json: stripe/openapi fixtures3, MIT, see
 * FakeStripe.fixtures.LICENSE) with the fields the request sets filled in. Each behaviour imitated cites the Stripe
 * documentation page it follows. Time is the fake's clock (`advance`), so Stripe's own expiry is a test step.
 *
 * Faults: any request can be answered with an error status (500, 429, …) before Stripe runs it, never answered
 * (`hang`), or run and then never answered (`hang-after`: the session exists, the caller timed out). Events can be
 * dropped, duplicated, delayed, held and released in another order.
 */
import { createHmac, randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { join } from "node:path"
import { freePort } from "./TestServer.ts"

// ---- JSON values and Stripe's form encoding ---------------------------------------------------------------------

export type Json = string | number | boolean | null | ReadonlyArray<Json> | { readonly [key: string]: Json }
export type JsonObject = { [key: string]: Json }

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const clone = <A extends Json>(value: A): A => structuredClone(value)

/**
 * Stripe's request bodies are form-encoded with bracketed keys (`line_items[0][price_data][currency]=eur`), as the
 * SDK writes them (https://docs.stripe.com/api: "accepts form-encoded request bodies"). Objects whose keys are all
 * indices become arrays.
 */
export const parseForm = (body: string): JsonObject => {
  const root: JsonObject = {}
  for (const [name, value] of new URLSearchParams(body)) {
    const path = name.split(/\[|\]\[|\]$/).filter((part, index) => index === 0 || part !== "")
    let node: JsonObject = root
    path.forEach((part, index) => {
      if (index === path.length - 1) node[part] = value
      else {
        const next = node[part]
        if (isObject(next)) node = next
        else {
          const created: JsonObject = {}
          node[part] = created
          node = created
        }
      }
    })
  }
  const arrays = (value: Json): Json => {
    if (!isObject(value)) return value
    const keys = Object.keys(value)
    const entries = Object.entries(value).map(([key, inner]) => [key, arrays(inner)] as const)
    if (keys.length > 0 && keys.every((key) => /^\d+$/.test(key))) {
      return entries.sort(([a], [b]) => Number(a) - Number(b)).map(([, inner]) => inner)
    }
    return Object.fromEntries(entries)
  }
  return arrays(root) as JsonObject
}

const canonical = (value: Json): string =>
  isObject(value)
    ? `{${Object.keys(value)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${canonical(value[key] ?? null)}`)
        .join(",")}}`
    : Array.isArray(value)
      ? `[${value.map(canonical).join(",")}]`
      : JSON.stringify(value)

const fixtures = (
  JSON.parse(readFileSync(join(import.meta.dirname, "FakeStripe.fixtures.json"), "utf8")) as {
    resources: Record<string, JsonObject>
  }
).resources
const fixture = (name: string): JsonObject => {
  const found = fixtures[name]
  if (found === undefined) throw new Error(`no Stripe fixture ${name}`)
  return clone(found)
}

const randomId = (prefix: string) => `${prefix}_${randomBytes(18).toString("base64url").replace(/[-_]/g, "x")}`

// ---- Errors, as Stripe answers them ------------------------------------------------------------------------------

/** Stripe's error object (https://docs.stripe.com/api/errors): `{error: {type, message, code?, param?}}`. */
class StripeFailure {
  readonly status: number
  readonly error: JsonObject
  readonly headers: Record<string, string>
  // Whether the endpoint had begun to run: only then is the answer kept under the Idempotency-Key.
  readonly executed: boolean
  constructor(status: number, error: JsonObject, headers: Record<string, string> = {}, executed = false) {
    this.status = status
    this.error = error
    this.headers = headers
    this.executed = executed
  }
}

const invalidRequest = (message: string, extra: JsonObject = {}, executed = false) =>
  new StripeFailure(400, { type: "invalid_request_error", message, ...extra }, {}, executed)

const missing = (param: string) =>
  invalidRequest(`Missing required param: ${param}.`, { code: "parameter_missing", param })

const noSuch = (object: string, id: string, param: string) =>
  new StripeFailure(404, {
    type: "invalid_request_error",
    code: "resource_missing",
    doc_url: "https://stripe.com/docs/error-codes/resource-missing",
    message: `No such ${object}: '${id}'`,
    param
  })

// ---- Faults -------------------------------------------------------------------------------------------------------

/**
 * How to spoil the next matching API request.
 * - `status`: answered with that HTTP status and Stripe's error body before Stripe runs the request, so nothing is
 *   kept under its Idempotency-Key (https://docs.stripe.com/idempotency: results are saved only once "execution of
 *   an endpoint begins"). 429 is Stripe's rate limit (https://docs.stripe.com/rate-limits). `shouldRetry` sets
 *   `Stripe-Should-Retry`, which the SDK obeys.
 * - `hang`: never answered and never run (the caller's timeout decides).
 * - `hang-after`: run, kept under its Idempotency-Key, and never answered: a create Kassa timed out on that Stripe did.
 * - `status-after`: run, kept under its Idempotency-Key, then answered with that status (5xx): the answer was lost on
 *   the way back, so a retry with the same key replays what Stripe did (https://docs.stripe.com/idempotency).
 * - `delay-after`: run, then answered `ms` later: the object exists (and its events may go out) before the caller
 *   hears of it (https://docs.stripe.com/webhooks#event-ordering: events are not guaranteed in any order).
 */
export type Fault =
  | { readonly kind: "status"; readonly status: number; readonly shouldRetry?: boolean }
  | { readonly kind: "hang" }
  | { readonly kind: "hang-after" }
  | { readonly kind: "status-after"; readonly status: number }
  | { readonly kind: "delay-after"; readonly ms: number }

interface FaultRule {
  readonly method: string | undefined
  readonly path: RegExp
  readonly fault: Fault
  remaining: number
}

/** What happens to the next events sent (each rule applies to `count` events, of `type` when given). */
export interface EventFault {
  readonly drop?: boolean
  /** Extra copies sent after the first (Stripe: "endpoints might occasionally receive the same event more than once"). */
  readonly duplicates?: number
  readonly delayMs?: number
  readonly type?: string
  readonly count?: number
}

// ---- Records -----------------------------------------------------------------------------------------------------

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly params: JsonObject
  readonly idempotencyKey: string | null
  readonly stripeVersion: string | null
  /** The W3C trace context the caller sent (Kassa sends its calling span's), for the tracing test. */
  readonly traceparent: string | null
  status: number | "no answer"
  replayed: boolean
}

export interface Delivery {
  readonly eventId: string
  readonly type: string
  readonly endpointId: string
  readonly url: string
  /** The endpoint's HTTP status, or the network error. */
  readonly status: number | string
}

interface Account {
  readonly id: string
  readonly livemode: boolean
}

interface Stored {
  readonly account: string
  readonly object: JsonObject
}

interface Endpoint extends Stored {
  readonly secret: string
}

interface SavedAnswer {
  readonly method: string
  readonly path: string
  readonly params: string
  readonly status: number
  readonly body: string
}

export interface FakeStripeOptions {
  /** The API version stamped on events when the endpoint named none (the SDK's pinned version). */
  readonly apiVersion?: string
}

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

export interface FakeStripe {
  /** `http://127.0.0.1:<port>`: what `KASSA_STRIPE_API_URL` would be. */
  readonly url: string
  readonly host: string
  readonly port: number
  readonly protocol: "http"
  /** A secret key of the default account (test mode). */
  readonly secretKey: string
  readonly accountId: string
  /** Adds an account with its own key: `sk_live_…` when `livemode`. */
  readonly addAccount: (options?: { readonly livemode?: boolean; readonly restricted?: boolean }) => {
    readonly key: string
    readonly accountId: string
  }
  /** Every API request, oldest first. */
  readonly requests: ReadonlyArray<RecordedRequest>
  readonly sessions: () => ReadonlyArray<JsonObject>
  readonly session: (id: string) => JsonObject
  readonly refund: (id: string) => JsonObject
  /** Every event Stripe created (sent or not), oldest first. */
  readonly events: ReadonlyArray<JsonObject>
  readonly deliveries: ReadonlyArray<Delivery>

  /** Spoils the next `times` requests matching `method` and `path`. */
  readonly inject: (
    match: { readonly method?: string; readonly path: string | RegExp },
    fault: Fault,
    times?: number
  ) => void
  readonly eventFault: (fault: EventFault) => void
  /** Keeps events instead of sending them, until {@link release}. */
  readonly hold: () => void
  /** Sends the held events in the given order (default: as created) and sends later events at once again. */
  readonly release: (order?: "as-created" | "reversed") => Promise<void>
  /** Resolves when every event sent so far has had its answer. */
  readonly settled: () => Promise<void>
  /** Sends an event again (Stripe's dashboard "Resend"). */
  readonly resend: (eventId: string) => Promise<void>

  /** The customer completes the checkout (the hosted page's Pay). `delayed` completes it unpaid (a delayed method). */
  readonly pay: (
    sessionId: string,
    customer?: { readonly name?: string | null; readonly email?: string | null; readonly phone?: string | null },
    options?: { readonly delayed?: boolean }
  ) => JsonObject
  /** A delayed payment's outcome: `checkout.session.async_payment_succeeded` or `_failed`. */
  readonly settleDelayed: (sessionId: string, outcome: "succeeded" | "failed") => JsonObject
  /** The fake's clock, in Unix seconds; `advance` moves it and expires open sessions past `expires_at`, as Stripe does. */
  readonly now: () => number
  readonly advance: (seconds: number) => void
  /** The status the next refunds get when created (default `succeeded`). */
  readonly nextRefundStatus: (status: "succeeded" | "pending" | "failed" | "canceled") => void
  /** A pending refund's outcome. */
  readonly settleRefund: (refundId: string, status: "succeeded" | "failed" | "canceled") => JsonObject
  /** A refund that had succeeded fails later (https://docs.stripe.com/refunds#failed-refunds). */
  readonly failSucceededRefund: (refundId: string) => JsonObject
  /** A refund made in Stripe's own dashboard: no Kassa metadata. */
  readonly refundInDashboard: (paymentIntentId: string, amount?: number) => JsonObject
  readonly close: () => Promise<void>
}

export const startFakeStripe = async (options: FakeStripeOptions = {}): Promise<FakeStripe> => {
  const defaultApiVersion = options.apiVersion ?? null
  const port = await freePort()
  const host = "127.0.0.1"
  const base = `http://${host}:${port}`
  let clock = Math.floor(Date.now() / 1000)

  const keys = new Map<string, Account>()
  const accounts = new Map<string, Account>()
  const addAccount = (opts: { readonly livemode?: boolean; readonly restricted?: boolean } = {}) => {
    const livemode = opts.livemode ?? false
    const account: Account = { id: randomId("acct"), livemode }
    const key = `${opts.restricted === true ? "rk" : "sk"}_${livemode ? "live" : "test"}_${randomBytes(24).toString("hex")}`
    accounts.set(account.id, account)
    keys.set(key, account)
    return { key, accountId: account.id }
  }
  const first = addAccount()

  const sessions = new Map<string, Stored>()
  const paymentIntents = new Map<string, Stored & { readonly charge: string }>()
  const charges = new Map<string, Stored>()
  const refunds = new Map<string, Stored>()
  const endpoints = new Map<string, Endpoint>()
  const saved = new Map<string, SavedAnswer>()
  const requests: Array<RecordedRequest> = []
  const events: Array<JsonObject> = []
  const deliveries: Array<Delivery> = []
  const faults: Array<FaultRule> = []
  const eventFaults: Array<EventFault & { remaining: number }> = []
  const held: Array<{ readonly event: JsonObject; readonly account: string }> = []
  const eventAccounts = new Map<string, string>()
  const inFlight = new Set<Promise<void>>()
  const hanging = new Set<ServerResponse>()
  let holding = false
  let refundStatus: "succeeded" | "pending" | "failed" | "canceled" = "succeeded"

  const find = <A extends Stored>(map: Map<string, A>, id: string, account: string, object: string, param: string) => {
    const found = map.get(id)
    // Objects belong to one account: another account's key gets "No such …" (https://docs.stripe.com/api/errors).
    if (found === undefined || found.account !== account) throw noSuch(object, id, param)
    return found
  }

  // ---- Events ------------------------------------------------------------------------------------------------

  /**
   * Stripe's signature (https://docs.stripe.com/webhooks#verify-manually): `Stripe-Signature: t=<unix>,v1=<hex>`,
   * v1 being HMAC-SHA256 of `<t>.<raw body>` keyed with the endpoint's `whsec_…` secret.
   */
  const sign = (payload: string, secret: string, timestamp: number) =>
    `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${payload}`, "utf8").digest("hex")}`

  const sendTo = async (endpoint: Endpoint, event: JsonObject): Promise<void> => {
    const url = String(endpoint.object.url)
    const payload = JSON.stringify({ ...event, api_version: endpoint.object.api_version ?? event.api_version }, null, 2)
    let status: number | string
    try {
      // Stripe posts JSON and waits a bounded time for a 2xx (https://docs.stripe.com/webhooks#acknowledge-events-immediately).
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json; charset=utf-8",
          "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
          "stripe-signature": sign(payload, endpoint.secret, clock)
        },
        body: payload,
        signal: AbortSignal.timeout(10_000)
      })
      await response.arrayBuffer()
      status = response.status
    } catch (error) {
      status = error instanceof Error ? error.message : String(error)
    }
    deliveries.push({
      eventId: String(event.id),
      type: String(event.type),
      endpointId: String(endpoint.object.id),
      url,
      status
    })
  }

  const track = (work: Promise<void>) => {
    inFlight.add(work)
    void work.finally(() => inFlight.delete(work))
  }

  /** Sends to every enabled endpoint of the account subscribed to the type (https://docs.stripe.com/api/webhook_endpoints/create#create_webhook_endpoint-enabled_events). */
  const dispatch = (event: JsonObject, account: string, fault: EventFault | undefined) => {
    const targets = [...endpoints.values()].filter((endpoint) => {
      const enabled = endpoint.object.enabled_events
      return (
        endpoint.account === account &&
        endpoint.object.status === "enabled" &&
        Array.isArray(enabled) &&
        (enabled.includes("*") || enabled.includes(String(event.type)))
      )
    })
    const copies = 1 + (fault?.duplicates ?? 0)
    const send = async () => {
      for (const endpoint of targets) for (let copy = 0; copy < copies; copy++) await sendTo(endpoint, event)
    }
    if (fault?.delayMs !== undefined) {
      const delay = fault.delayMs
      track(new Promise<void>((resolve) => setTimeout(resolve, delay)).then(send))
    } else track(send())
  }

  /**
   * Creates an event with a snapshot of the object now (https://docs.stripe.com/api/events/object) and sends it
   * after the API answer, as Stripe does: delivery is asynchronous and "Stripe doesn't guarantee delivery of events
   * in the order in which they're generated" (https://docs.stripe.com/webhooks#event-ordering).
   */
  const emit = (
    account: string,
    type: string,
    object: JsonObject,
    request: { id: string | null; key: string | null }
  ) => {
    const event: JsonObject = {
      ...fixture("event"),
      id: randomId("evt"),
      api_version: defaultApiVersion,
      created: clock,
      data: { object: clone(object) },
      livemode: accounts.get(account)?.livemode ?? false,
      pending_webhooks: 1,
      request: { id: request.id, idempotency_key: request.key },
      type
    }
    events.push(event)
    eventAccounts.set(String(event.id), account)
    const ruleIndex = eventFaults.findIndex((rule) => rule.type === undefined || rule.type === type)
    const rule = ruleIndex === -1 ? undefined : eventFaults[ruleIndex]
    if (rule !== undefined) {
      rule.remaining -= 1
      if (rule.remaining <= 0) eventFaults.splice(ruleIndex, 1)
      if (rule.drop === true) return
    }
    if (holding) held.push({ event, account })
    else setImmediate(() => dispatch(event, account, rule))
  }

  // ---- Objects -----------------------------------------------------------------------------------------------

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
      if (!isObject(price.product_data) || typeof price.product_data.name !== "string") {
        throw missing(`line_items[${index}][price_data][product_data][name]`)
      }
      total += unit * quantity
      currency = String(price.currency)
    })
    if (params.success_url === undefined) throw missing("success_url")
    const expiresAt = params.expires_at === undefined ? clock + maxLifetime : Number(params.expires_at)
    if (!Number.isInteger(expiresAt) || expiresAt < clock + minLifetime || expiresAt > clock + maxLifetime) {
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
    const methods = allowed ?? ["card"]
    return {
      ...fixture("checkout.session"),
      id,
      after_expiration: null,
      amount_subtotal: total,
      amount_total: total,
      cancel_url: (params.cancel_url as Json) ?? null,
      client_reference_id: (params.client_reference_id as Json) ?? null,
      collected_information: null,
      created: clock,
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

  /**
   * `expand[]=payment_intent` replaces the session's PaymentIntent id by the object
   * (https://docs.stripe.com/expand; https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-payment_intent
   * is expandable). Other expansions are refused, so a caller relying on one the fake lacks learns it.
   */
  const expanded = (account: string, session: JsonObject, params: JsonObject): JsonObject => {
    const expand = params.expand
    if (expand === undefined) return session
    const fields = Array.isArray(expand) ? expand.map(String) : [String(expand)]
    for (const field of fields) {
      if (field !== "payment_intent") {
        throw invalidRequest(`This property cannot be expanded (${field}).`, { param: "expand" })
      }
    }
    const intentId = session.payment_intent
    if (typeof intentId !== "string") return session
    const intent = paymentIntents.get(intentId)
    return intent === undefined || intent.account !== account
      ? session
      : { ...session, payment_intent: clone(intent.object) }
  }

  /** The session as the API shows it (without the fake's private keys). */
  const view = (session: JsonObject): JsonObject =>
    Object.fromEntries(Object.entries(session).filter(([key]) => !key.startsWith("~")))

  /** Refunded amount of a charge: pending and succeeded refunds both count (https://docs.stripe.com/api/refunds/create#create_refund-amount). */
  const refundTotals = (chargeId: string) => {
    let reserved = 0
    let succeeded = 0
    for (const refund of refunds.values()) {
      if (refund.object.charge !== chargeId) continue
      const amount = Number(refund.object.amount)
      if (refund.object.status === "succeeded") succeeded += amount
      if (refund.object.status === "succeeded" || refund.object.status === "pending") reserved += amount
    }
    return { reserved, succeeded }
  }

  const refreshCharge = (chargeId: string) => {
    const charge = charges.get(chargeId)
    if (charge === undefined) return
    const { succeeded } = refundTotals(chargeId)
    charge.object.amount_refunded = succeeded
    charge.object.refunded = succeeded >= Number(charge.object.amount)
  }

  const complete = (
    sessionId: string,
    customer: { readonly name?: string | null; readonly email?: string | null; readonly phone?: string | null },
    delayed: boolean
  ) => {
    const stored = sessions.get(sessionId)
    if (stored === undefined) throw new Error(`no session ${sessionId}`)
    const session = stored.object
    if (session.status !== "open") throw new Error(`session ${sessionId} is ${String(session.status)}, not open`)
    const account = stored.account
    const intentId = randomId("pi")
    const chargeId = randomId("ch")
    const amount = Number(session.amount_total)
    const intentData = session["~payment_intent_data"]
    const metadata = isObject(intentData) && isObject(intentData.metadata) ? intentData.metadata : {}
    const paid = !delayed
    // Since API version 2022-11-15 a Charge no longer carries its `refunds` list, not even in events: they are listed
    // with GET /v1/refunds?charge=… or ?payment_intent=… (https://docs.stripe.com/upgrades#2022-11-15).
    const { refunds: _noRefundsList, ...chargeFixture } = fixture("charge")
    charges.set(chargeId, {
      account,
      object: {
        ...chargeFixture,
        id: chargeId,
        amount,
        amount_captured: paid ? amount : 0,
        amount_refunded: 0,
        captured: paid,
        created: clock,
        currency: session.currency ?? null,
        livemode: session.livemode ?? null,
        metadata,
        paid,
        payment_intent: intentId,
        refunded: false,
        status: paid ? "succeeded" : "pending",
        source: null,
        transfer_data: null
      }
    })
    paymentIntents.set(intentId, {
      account,
      charge: chargeId,
      object: {
        ...fixture("payment_intent"),
        id: intentId,
        amount,
        amount_received: paid ? amount : 0,
        canceled_at: null,
        created: clock,
        currency: session.currency ?? null,
        last_payment_error: null,
        latest_charge: chargeId,
        livemode: session.livemode ?? null,
        metadata,
        status: paid ? "succeeded" : "processing"
      }
    })
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
    emit(account, "checkout.session.completed", view(session), { id: null, key: null })
    return view(session)
  }

  const expireSession = (stored: Stored, request: { id: string | null; key: string | null }) => {
    stored.object.status = "expired"
    // https://docs.stripe.com/api/checkout/sessions/expire: after it expires, nobody can complete it.
    emit(stored.account, "checkout.session.expired", view(stored.object), request)
  }

  const newRefund = (account: string, params: JsonObject, request: { id: string | null; key: string | null }) => {
    const intentId = params.payment_intent
    if (typeof intentId !== "string") throw missing("payment_intent")
    const intent = find(paymentIntents, intentId, account, "payment_intent", "payment_intent")
    const charge = charges.get(intent.charge)
    if (charge === undefined || charge.object.status !== "succeeded") {
      throw invalidRequest(`PaymentIntent ${intentId} does not have a successful charge to refund.`, {
        param: "payment_intent"
      })
    }
    const { reserved } = refundTotals(intent.charge)
    const refundable = Number(charge.object.amount) - reserved
    // https://docs.stripe.com/api/refunds/create: amount defaults to the whole remaining amount; more is refused.
    if (refundable <= 0) {
      throw invalidRequest(
        `Charge ${intent.charge} has already been refunded.`,
        { code: "charge_already_refunded" },
        true
      )
    }
    const amount = params.amount === undefined ? refundable : Number(params.amount)
    if (!Number.isInteger(amount) || amount < 1) throw invalidRequest("Invalid positive integer", { param: "amount" })
    if (amount > refundable) {
      throw invalidRequest(
        `Refund amount (${amount}) is greater than unrefunded amount on charge (${refundable})`,
        { code: "amount_too_large", param: "amount" },
        true
      )
    }
    const refund: JsonObject = {
      ...fixture("refund"),
      id: randomId("re"),
      amount,
      balance_transaction: randomId("txn"),
      charge: intent.charge,
      created: clock,
      currency: charge.object.currency ?? null,
      metadata: isObject(params.metadata) ? params.metadata : {},
      payment_intent: intentId,
      reason: (params.reason as Json) ?? null,
      status: refundStatus
    }
    refunds.set(String(refund.id), { account, object: refund })
    refreshCharge(intent.charge)
    refundEvents(account, refund, "refund.created", request)
    return refund
  }

  /**
   * Refund events as of API version 2024-10-28 (https://docs.stripe.com/changelog/acacia/2024-10-28/refund-webhook-update):
   * `refund.created` / `refund.updated` for every refund, `refund.failed` when it fails, and `charge.refunded` when
   * money went back.
   */
  const refundEvents = (
    account: string,
    refund: JsonObject,
    type: "refund.created" | "refund.updated",
    request: { id: string | null; key: string | null }
  ) => {
    emit(account, type, refund, request)
    if (refund.status === "succeeded") {
      const charge = charges.get(String(refund.charge))
      if (charge !== undefined) emit(account, "charge.refunded", charge.object, request)
    }
    if (refund.status === "failed") emit(account, "refund.failed", refund, request)
  }

  const changeRefund = (refundId: string, status: string, from: ReadonlyArray<string>) => {
    const stored = refunds.get(refundId)
    if (stored === undefined) throw new Error(`no refund ${refundId}`)
    if (!from.includes(String(stored.object.status))) {
      throw new Error(`refund ${refundId} is ${String(stored.object.status)}, not ${from.join(" or ")}`)
    }
    stored.object.status = status
    if (status === "failed") {
      stored.object.failure_reason = "expired_or_canceled_card"
      stored.object.failure_balance_transaction = randomId("txn")
    }
    refreshCharge(String(stored.object.charge))
    refundEvents(stored.account, stored.object, "refund.updated", { id: null, key: null })
    return clone(stored.object)
  }

  /**
   * A list page as Stripe answers one (https://docs.stripe.com/api/pagination): newest first, `limit` 1–100
   * (default 10), `starting_after` the last id of the previous page, `created[gt|gte|lt|lte]` filters
   * (https://docs.stripe.com/api/checkout/sessions/list#list_checkout_sessions-created).
   */
  const listPage = (items: ReadonlyArray<JsonObject>, params: JsonObject, url: string): JsonObject => {
    const limit = params.limit === undefined ? 10 : Number(params.limit)
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw invalidRequest("Invalid integer: limit must be between 1 and 100.", { param: "limit" })
    }
    const created = isObject(params.created) ? params.created : {}
    const bound = (name: string) => (created[name] === undefined ? undefined : Number(created[name]))
    const [gt, gte, lt, lte] = [bound("gt"), bound("gte"), bound("lt"), bound("lte")]
    const matching = items
      .filter((item) => {
        const at = Number(item.created)
        return (
          (gt === undefined || at > gt) &&
          (gte === undefined || at >= gte) &&
          (lt === undefined || at < lt) &&
          (lte === undefined || at <= lte)
        )
      })
      .reverse()
    const after = typeof params.starting_after === "string" ? params.starting_after : null
    const start = after === null ? 0 : matching.findIndex((item) => item.id === after) + 1
    const page = matching.slice(start, start + limit)
    return { object: "list", data: page, has_more: start + limit < matching.length, url }
  }

  // ---- The API -----------------------------------------------------------------------------------------------

  type Route = (
    account: Account,
    params: JsonObject,
    match: ReadonlyArray<string | undefined>,
    request: { id: string; key: string | null }
  ) => JsonObject

  const routes: ReadonlyArray<{ readonly method: string; readonly path: RegExp; readonly run: Route }> = [
    {
      // https://docs.stripe.com/api/accounts/retrieve: the account of the key.
      method: "GET",
      path: /^\/v1\/account$/,
      run: (account) => ({
        ...fixture("account"),
        id: account.id,
        charges_enabled: true,
        details_submitted: true,
        payouts_enabled: true,
        external_accounts: {
          data: [],
          has_more: false,
          object: "list",
          url: `/v1/accounts/${account.id}/external_accounts`
        }
      })
    },
    {
      // https://docs.stripe.com/api/webhook_endpoints/create: `secret` is only returned at creation.
      method: "POST",
      path: /^\/v1\/webhook_endpoints$/,
      run: (account, params) => {
        if (typeof params.url !== "string") throw missing("url")
        if (!Array.isArray(params.enabled_events) || params.enabled_events.length === 0) throw missing("enabled_events")
        const object: JsonObject = {
          ...fixture("webhook_endpoint"),
          id: randomId("we"),
          api_version: (params.api_version as Json) ?? null,
          created: clock,
          description: (params.description as Json) ?? null,
          enabled_events: params.enabled_events,
          livemode: account.livemode,
          metadata: isObject(params.metadata) ? params.metadata : {},
          status: "enabled",
          url: params.url
        }
        const secret = `whsec_${randomBytes(24).toString("base64url").replace(/[-_]/g, "x")}`
        endpoints.set(String(object.id), { account: account.id, object, secret })
        return { ...object, secret }
      }
    },
    {
      // https://docs.stripe.com/api/webhook_endpoints/delete
      method: "DELETE",
      path: /^\/v1\/webhook_endpoints\/([^/]+)$/,
      run: (account, _params, match) => {
        const id = match[1] ?? ""
        find(endpoints, id, account.id, "webhook endpoint", "id")
        endpoints.delete(id)
        return { ...fixture("deleted_webhook_endpoint"), id }
      }
    },
    {
      // https://docs.stripe.com/api/checkout/sessions/create
      method: "POST",
      path: /^\/v1\/checkout\/sessions$/,
      run: (account, params) => {
        const session = newSession(account, params)
        sessions.set(String(session.id), { account: account.id, object: session })
        return view(session)
      }
    },
    {
      // https://docs.stripe.com/api/checkout/sessions/list: the account's sessions, newest first; `status` filters;
      // `expand[]=data.payment_intent` expands each (https://docs.stripe.com/expand#lists).
      method: "GET",
      path: /^\/v1\/checkout\/sessions$/,
      run: (account, params) => {
        const expand = params.expand
        const fields = expand === undefined ? [] : Array.isArray(expand) ? expand.map(String) : [String(expand)]
        const inner = fields.map((field) => field.replace(/^data\./, ""))
        if (fields.some((field) => !field.startsWith("data."))) {
          throw invalidRequest("Expansions of a list start with `data.`.", { param: "expand" })
        }
        const owned = [...sessions.values()]
          .filter((stored) => stored.account === account.id)
          .map((stored) => stored.object)
          .filter((session) => params.status === undefined || session.status === params.status)
        const page = listPage(owned, params, "/v1/checkout/sessions")
        const data = (page.data as ReadonlyArray<JsonObject>).map((session) =>
          expanded(account.id, view(session), inner.length === 0 ? {} : { expand: inner })
        )
        return { ...page, data }
      }
    },
    {
      // https://docs.stripe.com/api/checkout/sessions/retrieve
      method: "GET",
      path: /^\/v1\/checkout\/sessions\/([^/]+)$/,
      run: (account, params, match) =>
        expanded(
          account.id,
          view(find(sessions, match[1] ?? "", account.id, "checkout.session", "session").object),
          params
        )
    },
    {
      // https://docs.stripe.com/api/payment_intents/retrieve
      method: "GET",
      path: /^\/v1\/payment_intents\/([^/]+)$/,
      run: (account, _params, match) =>
        clone(find(paymentIntents, match[1] ?? "", account.id, "payment_intent", "intent").object)
    },
    {
      // https://docs.stripe.com/api/checkout/sessions/expire: only an `open` session can be expired; otherwise an error.
      method: "POST",
      path: /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/,
      run: (account, params, match, request) => {
        const stored = find(sessions, match[1] ?? "", account.id, "checkout.session", "session")
        if (stored.object.status !== "open") {
          throw invalidRequest(
            `This Checkout Session is ${String(stored.object.status)} and can no longer be expired; only sessions with status \`open\` can be expired.`,
            {},
            true
          )
        }
        expireSession(stored, request)
        return expanded(account.id, view(stored.object), params)
      }
    },
    {
      // https://docs.stripe.com/api/refunds/create
      method: "POST",
      path: /^\/v1\/refunds$/,
      run: (account, params, _match, request) => newRefund(account.id, params, request)
    },
    {
      // https://docs.stripe.com/api/refunds/list: newest first, filtered by `charge` or `payment_intent`.
      method: "GET",
      path: /^\/v1\/refunds$/,
      run: (account, params) => {
        const owned = [...refunds.values()]
          .filter((stored) => stored.account === account.id)
          .map((stored) => clone(stored.object))
          .filter(
            (refund) =>
              (params.charge === undefined || refund.charge === params.charge) &&
              (params.payment_intent === undefined || refund.payment_intent === params.payment_intent)
          )
        return listPage(owned, params, "/v1/refunds")
      }
    },
    {
      // https://docs.stripe.com/api/refunds/retrieve
      method: "GET",
      path: /^\/v1\/refunds\/([^/]+)$/,
      run: (account, _params, match) => clone(find(refunds, match[1] ?? "", account.id, "refund", "refund").object)
    }
  ]

  /**
   * The API key comes as HTTP Basic or Bearer (https://docs.stripe.com/api/authentication); a key Stripe does not
   * know gets 401 "Invalid API Key provided".
   */
  const authenticate = (header: string | undefined): Account => {
    const key = header?.startsWith("Bearer ")
      ? header.slice(7)
      : header?.startsWith("Basic ")
        ? Buffer.from(header.slice(6), "base64").toString("utf8").replace(/:$/, "")
        : undefined
    if (key === undefined || key === "") {
      throw new StripeFailure(401, {
        type: "invalid_request_error",
        message:
          "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY')."
      })
    }
    const account = keys.get(key)
    if (account === undefined) {
      throw new StripeFailure(401, {
        type: "invalid_request_error",
        message: `Invalid API Key provided: ${key.slice(0, 8)}${"*".repeat(Math.max(0, key.length - 12))}${key.slice(-4)}`
      })
    }
    return account
  }

  const respond = (response: ServerResponse, status: number, body: string, headers: Record<string, string>) => {
    response.writeHead(status, { "content-type": "application/json", ...headers })
    response.end(body)
  }

  const api = (request: IncomingMessage, response: ServerResponse, body: string) => {
    const url = new URL(request.url ?? "/", base)
    const method = request.method ?? "GET"
    const params = method === "GET" || method === "DELETE" ? parseForm(url.search.slice(1)) : parseForm(body)
    const key = typeof request.headers["idempotency-key"] === "string" ? request.headers["idempotency-key"] : null
    const version = typeof request.headers["stripe-version"] === "string" ? request.headers["stripe-version"] : null
    const record: RecordedRequest = {
      method,
      path: url.pathname,
      params,
      idempotencyKey: key,
      stripeVersion: version,
      traceparent: typeof request.headers.traceparent === "string" ? request.headers.traceparent : null,
      status: "no answer",
      replayed: false
    }
    requests.push(record)
    const requestId = randomId("req")
    const headers: Record<string, string> = {
      "request-id": requestId,
      ...(version === null ? {} : { "stripe-version": version }),
      ...(key === null ? {} : { "idempotency-key": key })
    }
    const send = (status: number, payload: string, extra: Record<string, string> = {}) => {
      record.status = status
      respond(response, status, payload, { ...headers, ...extra })
    }
    const fail = (failure: StripeFailure) =>
      send(
        failure.status,
        JSON.stringify({ error: { ...failure.error, request_log_url: null } }, null, 2),
        failure.headers
      )
    const hang = () => {
      hanging.add(response)
      response.on("close", () => hanging.delete(response))
    }
    try {
      const account = authenticate(request.headers.authorization)
      const ruleIndex = faults.findIndex(
        (rule) => (rule.method === undefined || rule.method === method) && rule.path.test(url.pathname)
      )
      const fault = ruleIndex === -1 ? undefined : faults[ruleIndex]?.fault
      if (ruleIndex !== -1) {
        const rule = faults[ruleIndex]
        if (rule !== undefined && --rule.remaining <= 0) faults.splice(ruleIndex, 1)
      }
      if (fault?.kind === "hang") return hang()
      if (fault?.kind === "status") {
        const type =
          fault.status === 429 ? "rate_limit_error" : fault.status >= 500 ? "api_error" : "invalid_request_error"
        return fail(
          new StripeFailure(
            fault.status,
            {
              type,
              message:
                fault.status === 429
                  ? "Too many requests hit the API too quickly."
                  : "An unknown error occurred (injected by the fake)."
            },
            fault.shouldRetry === undefined ? {} : { "stripe-should-retry": String(fault.shouldRetry) }
          )
        )
      }
      const route = routes.find((candidate) => candidate.method === method && candidate.path.test(url.pathname))
      if (route === undefined) {
        return fail(
          new StripeFailure(404, {
            type: "invalid_request_error",
            message: `Unrecognized request URL (${method}: ${url.pathname}).`
          })
        )
      }
      // https://docs.stripe.com/idempotency: POSTs with a key already used replay the saved status and body; the same
      // key with other parameters is an `idempotency_error`. Keys belong to the account.
      const slot = key === null || method !== "POST" ? null : `${account.id} ${key}`
      const fingerprint = canonical(params)
      const previous = slot === null ? undefined : saved.get(slot)
      if (previous !== undefined) {
        if (previous.method !== method || previous.path !== url.pathname || previous.params !== fingerprint) {
          return fail(
            new StripeFailure(400, {
              type: "idempotency_error",
              message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`
            })
          )
        }
        record.replayed = true
        if (fault?.kind === "hang-after") return hang()
        return send(previous.status, previous.body, { "idempotent-replayed": "true" })
      }
      let status = 200
      let payload: string
      try {
        payload = JSON.stringify(
          route.run(account, params, url.pathname.match(route.path) ?? [], { id: requestId, key }),
          null,
          2
        )
      } catch (error) {
        if (!(error instanceof StripeFailure)) throw error
        // A request that fails validation is not kept under its key (https://docs.stripe.com/idempotency).
        if (!error.executed) return fail(error)
        status = error.status
        payload = JSON.stringify({ error: { ...error.error, request_log_url: null } }, null, 2)
      }
      if (slot !== null) saved.set(slot, { method, path: url.pathname, params: fingerprint, status, body: payload })
      if (fault?.kind === "hang-after") return hang()
      if (fault?.kind === "delay-after") {
        const answer = payload
        return void setTimeout(() => send(status, answer), fault.ms)
      }
      if (fault?.kind === "status-after") {
        return fail(
          new StripeFailure(fault.status, {
            type: "api_error",
            message: "An unknown error occurred after the request ran (injected by the fake)."
          })
        )
      }
      return send(status, payload)
    } catch (error) {
      if (error instanceof StripeFailure) return fail(error)
      return fail(
        new StripeFailure(500, { type: "api_error", message: error instanceof Error ? error.message : String(error) })
      )
    }
  }

  // ---- The hosted checkout page ------------------------------------------------------------------------------

  const html = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

  const page = (response: ServerResponse, status: number, title: string, body: string) => {
    response.writeHead(status, { "content-type": "text/html; charset=utf-8" })
    response.end(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${html(title)}</title></head><body><main><h1>${html(title)}</h1>${body}</main></body></html>`
    )
  }

  const checkoutForm = (session: JsonObject, notice: string | null) => {
    const email = typeof session.customer_email === "string" ? session.customer_email : ""
    const amount = `${(Number(session.amount_total) / 100).toFixed(2)} ${String(session.currency).toUpperCase()}`
    return `${notice === null ? "" : `<p role="alert">${html(notice)}</p>`}
<p>Amount: <strong id="amount">${html(amount)}</strong></p>
<form method="post" action="/pay/${html(String(session.id))}">
  <label>Name <input name="name" autocomplete="name"></label>
  <label>Email <input name="email" type="email" value="${html(email)}"></label>
  <label>Phone <input name="phone" type="tel"></label>
  <button name="action" value="pay">Pay</button>
  <button name="action" value="decline">Decline</button>
  <button name="action" value="abandon" formnovalidate>Abandon</button>
</form>`
  }

  /** `{CHECKOUT_SESSION_ID}` in success_url is replaced by the session id (https://docs.stripe.com/payments/checkout/custom-success-page). */
  const successUrl = (session: JsonObject) =>
    String(session.success_url).replaceAll("{CHECKOUT_SESSION_ID}", String(session.id))

  const hosted = (request: IncomingMessage, response: ServerResponse, body: string, sessionId: string) => {
    const stored = sessions.get(sessionId)
    if (stored === undefined)
      return page(response, 404, "Something went wrong", "<p>This checkout page does not exist.</p>")
    const session = stored.object
    if (session.status === "expired") {
      return page(response, 410, "This checkout session has expired", "<p>Return to the merchant to try again.</p>")
    }
    if (session.status === "complete") {
      return page(
        response,
        200,
        "Payment complete",
        `<p><a href="${html(successUrl(session))}">Back to the merchant</a></p>`
      )
    }
    if (request.method !== "POST") return page(response, 200, "Checkout", checkoutForm(session, null))
    const form = new URLSearchParams(body)
    const text = (name: string) => {
      const value = form.get(name)?.trim() ?? ""
      return value === "" ? null : value
    }
    switch (form.get("action")) {
      case "pay": {
        const delayed =
          Array.isArray(session.payment_method_types) &&
          session.payment_method_types.some((method) => delayedMethods.has(String(method)))
        complete(sessionId, { name: text("name"), email: text("email"), phone: text("phone") }, delayed)
        response.writeHead(303, { location: successUrl(session) })
        return response.end()
      }
      case "decline":
        // A declined card leaves the checkout open for another try (https://docs.stripe.com/testing#declined-payments).
        return page(response, 402, "Checkout", checkoutForm(session, "Your card was declined."))
      case "abandon": {
        // The customer goes back: to cancel_url, the session stays open until it expires (https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-cancel_url).
        const cancel = session.cancel_url
        if (typeof cancel !== "string")
          return page(response, 200, "Checkout abandoned", "<p>You left the checkout.</p>")
        response.writeHead(303, { location: cancel })
        return response.end()
      }
      default:
        return page(response, 400, "Checkout", checkoutForm(session, "Choose Pay, Decline or Abandon."))
    }
  }

  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      const path = new URL(request.url ?? "/", base).pathname
      const hostedMatch = path.match(/^\/pay\/([^/]+)$/)
      if (hostedMatch !== null) return hosted(request, response, body, hostedMatch[1] ?? "")
      return api(request, response, body)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))

  const expireDue = () => {
    for (const stored of sessions.values()) {
      // https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-expires_at
      if (stored.object.status === "open" && Number(stored.object.expires_at) <= clock) {
        expireSession(stored, { id: null, key: null })
      }
    }
  }

  return {
    url: base,
    host,
    port,
    protocol: "http",
    secretKey: first.key,
    accountId: first.accountId,
    addAccount,
    requests,
    sessions: () => [...sessions.values()].map((stored) => view(stored.object)),
    session: (id) => {
      const stored = sessions.get(id)
      if (stored === undefined) throw new Error(`no session ${id}`)
      return view(stored.object)
    },
    refund: (id) => {
      const stored = refunds.get(id)
      if (stored === undefined) throw new Error(`no refund ${id}`)
      return clone(stored.object)
    },
    events,
    deliveries,
    inject: (match, fault, times = 1) => {
      const path =
        typeof match.path === "string"
          ? new RegExp(`^${match.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`)
          : match.path
      faults.push({ method: match.method, path, fault, remaining: times })
    },
    eventFault: (fault) => {
      eventFaults.push({ ...fault, remaining: fault.count ?? 1 })
    },
    hold: () => {
      holding = true
    },
    release: async (order = "as-created") => {
      holding = false
      const batch = held.splice(0, held.length)
      if (order === "reversed") batch.reverse()
      for (const { event, account } of batch) {
        dispatch(event, account, undefined)
        // One at a time, so the endpoint sees them in exactly this order.
        await Promise.all([...inFlight])
      }
    },
    settled: async () => {
      await new Promise((resolve) => setImmediate(resolve))
      while (inFlight.size > 0) {
        await Promise.all([...inFlight])
        await new Promise((resolve) => setImmediate(resolve))
      }
    },
    resend: async (eventId) => {
      const event = events.find((candidate) => candidate.id === eventId)
      const account = eventAccounts.get(eventId)
      if (event === undefined || account === undefined) throw new Error(`no event ${eventId}`)
      dispatch(event, account, undefined)
      await Promise.all([...inFlight])
    },
    pay: (sessionId, customer = {}, payOptions = {}) => complete(sessionId, customer, payOptions.delayed === true),
    settleDelayed: (sessionId, outcome) => {
      const stored = sessions.get(sessionId)
      if (stored === undefined || stored.object.status !== "complete" || stored.object.payment_status !== "unpaid") {
        throw new Error(`session ${sessionId} is not awaiting a delayed payment`)
      }
      const intent = paymentIntents.get(String(stored.object.payment_intent))
      const charge = intent === undefined ? undefined : charges.get(intent.charge)
      if (outcome === "succeeded") {
        stored.object.payment_status = "paid"
        if (intent !== undefined)
          Object.assign(intent.object, { status: "succeeded", amount_received: intent.object.amount })
        if (charge !== undefined) Object.assign(charge.object, { status: "succeeded", paid: true, captured: true })
      } else {
        if (intent !== undefined) Object.assign(intent.object, { status: "requires_payment_method" })
        if (charge !== undefined) Object.assign(charge.object, { status: "failed" })
      }
      // https://docs.stripe.com/payments/checkout/how-checkout-works#delayed-notification
      emit(stored.account, `checkout.session.async_payment_${outcome}`, view(stored.object), { id: null, key: null })
      return view(stored.object)
    },
    now: () => clock,
    advance: (seconds) => {
      clock += seconds
      expireDue()
    },
    nextRefundStatus: (status) => {
      refundStatus = status
    },
    settleRefund: (refundId, status) => changeRefund(refundId, status, ["pending"]),
    failSucceededRefund: (refundId) => changeRefund(refundId, "failed", ["succeeded"]),
    refundInDashboard: (paymentIntentId, amount) => {
      const intent = paymentIntents.get(paymentIntentId)
      if (intent === undefined) throw new Error(`no payment intent ${paymentIntentId}`)
      const params: JsonObject = {
        payment_intent: paymentIntentId,
        ...(amount === undefined ? {} : { amount: String(amount) })
      }
      return newRefund(intent.account, params, { id: null, key: null })
    },
    close: async () => {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

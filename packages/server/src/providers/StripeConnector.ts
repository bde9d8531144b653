/**
 * The Stripe implementation of {@link ProviderConnector}, with the official `stripe` SDK only (research
 * live-provider.md: it knows Stripe's form encoding, errors, API versions and signature scheme; a hand-written client
 * would have to keep up with all four).
 *
 * - One SDK client per link, made when the link is first used (its key opened from the database then), kept in a
 *   small bounded cache: a client holds an HTTP agent, not worth making per call, and the key stays closed until used.
 * - `KASSA_STRIPE_API_URL` gives the protocol, host and port; the API version is pinned (the one stripe 23.1.0 ships
 *   with), so Stripe's answers keep the shape this file reads whatever the account's default version is.
 * - 10 s timeout and no SDK retries: one call is one bounded attempt; Kassa retries itself (reconciler, expiry), always
 *   with its own Idempotency-Key, so a retry of a create that Stripe did run replays the same session.
 * - Errors: no status (timeout, connection refused), 5xx, 409 (a concurrent request with the same key) and 429 are
 *   "no answer"; 401/403 are a refused key (`secret_key`); other 4xx are refusals.
 */
import { Ids, type ProviderSettlement } from "@kassa/core"
import { Clock, Context, DateTime, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import Stripe from "stripe"
import { InvalidSetting, ServerConfig } from "../config/ServerConfig.ts"
import * as Tracing from "../observability/Tracing.ts"
import {
  type CheckoutReading,
  EventRejected,
  type EventSubject,
  type LinkAccess,
  type NoAnswer,
  noAnswer,
  ProviderConnector,
  ProviderRefused,
  type RefundReading
} from "./ProviderConnector.ts"

/** The API version stripe 23.1.0 ships with (`stripe/esm/apiVersion.js`): requests and endpoints are pinned to it. */
export const apiVersion = "2026-10-28.endive" as const

/** Stripe's signature tolerance (decisions §10): an event signed longer ago is refused. */
export const signatureToleranceSeconds = 300

/** The events a link's endpoint subscribes to (decisions §10). */
export const subscribedEvents = [
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
  "checkout.session.async_payment_failed",
  "checkout.session.expired",
  "charge.refunded",
  "refund.created",
  "refund.updated",
  "refund.failed"
] as const

/**
 * A Checkout Session expires 30 minutes to 24 hours after its creation
 * (https://docs.stripe.com/api/checkout/sessions/create#create_checkout_session-expires_at); a minute's margin each
 * side covers the call's transit.
 */
const checkoutWindow = { min: Duration.minutes(31), max: Duration.subtract(Duration.hours(24), Duration.minutes(1)) }

/** Stripe Checkout's locales (https://docs.stripe.com/api/checkout/sessions/create#create_checkout_session-locale). */
const locales =
  "bg cs da de el en en-GB es es-419 et fi fil fr fr-CA hr hu id it ja ko lt lv ms mt nb nl pl pt pt-BR ro"
const checkoutLocales = new Set(`${locales} ru sk sl sv th tr vi zh zh-HK zh-TW`.split(" "))

/** Kassa's `ll` or `ll-CC` as a locale Stripe knows (exact, else the language), or none (Stripe picks). */
export const stripeLocale = (locale: string): Stripe.Checkout.SessionCreateParams.Locale | undefined => {
  if (checkoutLocales.has(locale)) return locale as Stripe.Checkout.SessionCreateParams.Locale
  const language = locale.split("-")[0] ?? ""
  return checkoutLocales.has(language) ? (language as Stripe.Checkout.SessionCreateParams.Locale) : undefined
}

const keyRefusal = (error: Stripe.errors.StripeError) =>
  new ProviderRefused({
    message:
      error.statusCode === 403
        ? `Stripe refused the key for this request (${error.message}). A restricted key needs write access to Checkout Sessions, Webhook Endpoints and Refunds, and read access to PaymentIntents and the account (connected_account_read).`
        : `Stripe refused the key: ${error.message}`,
    field: "secret_key",
    code: error.code ?? null,
    status: error.statusCode ?? 401
  })

/** Sorts an SDK failure into "no answer" (a success value) or a refusal. Anything else is a defect. */
const classify = (error: unknown): Effect.Effect<NoAnswer, ProviderRefused> => {
  if (!(error instanceof Stripe.errors.StripeError)) return Effect.die(error)
  const status = error.statusCode
  if (status === undefined) {
    return Effect.succeed(noAnswer(/timeout/i.test(error.message) ? "timeout" : "unavailable"))
  }
  if (status === 429) return Effect.succeed(noAnswer("rate_limited"))
  // 409: another request with the same key is still running (https://docs.stripe.com/idempotency).
  if (status >= 500 || status === 409) return Effect.succeed(noAnswer("unavailable"))
  if (status === 401 || status === 403 || error.code === "api_key_expired") return Effect.fail(keyRefusal(error))
  return Effect.fail(new ProviderRefused({ message: error.message, field: null, code: error.code ?? null, status }))
}

const fromUnix = (seconds: number) => DateTime.makeUnsafe(seconds * 1000)

/** A checkout as Stripe shows it now, in the core's vocabulary (decisions §10's table). */
export const checkoutReading = (session: Stripe.Checkout.Session): CheckoutReading => {
  const intent = session.payment_intent
  const providerPaymentId = typeof intent === "string" ? intent : (intent?.id ?? null)
  const reading = (state: ProviderSettlement.CheckoutState): CheckoutReading => ({
    _tag: "Checkout",
    state,
    providerPaymentId
  })
  switch (session.status) {
    case "complete": {
      if (session.payment_status === "paid" || session.payment_status === "no_payment_required") {
        const details = session.customer_details
        return reading({
          _tag: "Paid",
          customer: { name: details?.name ?? null, email: details?.email ?? null, phone: details?.phone ?? null }
        })
      }
      // A delayed method that failed leaves the session complete and unpaid; its PaymentIntent tells
      // (https://docs.stripe.com/payments/checkout/how-checkout-works#delayed-notification: the intent goes back to
      // requires_payment_method, or is canceled).
      const status = typeof intent === "object" && intent !== null ? intent.status : null
      const failed = status === "requires_payment_method" || status === "canceled"
      return reading(failed ? { _tag: "Failed" } : { _tag: "Unpaid" })
    }
    case "expired":
      return reading({ _tag: "Expired" })
    default:
      return reading({ _tag: "Open" })
  }
}

const refundStatus = (status: string | null): ProviderSettlement.ProviderRefundStatus =>
  status === "succeeded" || status === "failed" || status === "canceled" ? status : "pending"

const decodeRefundId = Schema.decodeUnknownOption(Ids.RefundId)
const parseRefundId = (value: unknown): Ids.RefundId | null => Option.getOrNull(decodeRefundId(value))

const idOf = (value: string | { readonly id: string } | null | undefined): string | null =>
  typeof value === "string" ? value : (value?.id ?? null)

/** A Stripe refund in the core's vocabulary; Kassa's id from its metadata, else `unknownAs`. */
export const refundReading = (refund: Stripe.Refund, unknownAs: Ids.RefundId): RefundReading => {
  const kassaId = parseRefundId(refund.metadata?.kassa_refund_id)
  return {
    _tag: "Refund",
    kassaMade: kassaId !== null,
    providerPaymentId: idOf(refund.payment_intent),
    refund: {
      refund_id: kassaId ?? unknownAs,
      provider_refund_id: refund.id,
      amount: refund.amount,
      status: refundStatus(refund.status),
      created_at: fromUnix(refund.created)
    }
  }
}

/** What an event is about (decisions §10: an event is a hint; Kassa reads the object again). */
export const eventSubject = (event: Stripe.Event): EventSubject => {
  const object = event.data.object as unknown as Record<string, unknown> & { readonly id: string }
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
    case "checkout.session.async_payment_failed":
    case "checkout.session.expired":
      return {
        _tag: "Checkout",
        checkoutId: object.id,
        paymentId: typeof object.client_reference_id === "string" ? object.client_reference_id : null
      }
    case "refund.created":
    case "refund.updated":
    case "refund.failed":
      return { _tag: "Refund", providerRefundId: object.id }
    case "charge.refunded": {
      // A Charge has carried no `refunds` list since API version 2022-11-15 (https://docs.stripe.com/upgrades#2022-11-15):
      // its refunds are listed by payment intent ({@link ProviderConnector.listRefunds}).
      const charge = object as unknown as Stripe.Charge
      return { _tag: "RefundsChanged", providerPaymentId: idOf(charge.payment_intent) }
    }
    default:
      return { _tag: "Other" }
  }
}

/**
 * Runs the synchronous start of an SDK call without the call-site stack the SDK formats for every request
 * (`new Error().stack` in StripeResource._makeRequest, kept only to decorate its errors): Kassa sorts those errors by
 * status and code, never by stack, and the formatting was a measurable share of a live create's CPU (issue 12's bench).
 */
const withoutCallSite = <A>(start: () => A): A => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return start()
  } finally {
    Error.stackTraceLimit = limit
  }
}

const header = (headers: Readonly<Record<string, string | undefined>>, name: string) => {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value
  return undefined
}

/** How long a Stripe call may take before it is "no answer" (decisions §10). */
export const callTimeout = Duration.seconds(10)

/**
 * The bound of the server's Stripe calls: {@link callTimeout} unless a test shortens it (tests that wait for a call
 * that never answers). No setting reaches it, and a production start with another value stops.
 */
export const CallTimeout = Context.Reference<Duration.Duration>("@kassa/server/providers/StripeConnector/CallTimeout", {
  defaultValue: () => callTimeout
})

/** The connector with the settings' `KASSA_STRIPE_API_URL`, every call bounded by {@link CallTimeout}. */
export const layer = Layer.effect(
  ProviderConnector,
  Effect.gen(function* () {
    const config = yield* ServerConfig
    const url = new URL(config.stripeApiUrl)
    const protocol = url.protocol === "http:" ? ("http" as const) : ("https" as const)
    const port = url.port === "" ? (protocol === "http" ? 80 : 443) : Number(url.port)
    const timeout = yield* CallTimeout
    if (config.environment === "production" && !Duration.equals(timeout, callTimeout)) {
      return yield* Effect.die(new InvalidSetting("a shortened Stripe call bound is for tests only"))
    }
    const timeoutMillis = Math.max(1, Math.round(Duration.toMillis(timeout)))

    const makeClient = (key: Redacted.Redacted<string>) =>
      new Stripe(Redacted.value(key), {
        apiVersion,
        protocol,
        host: url.hostname,
        port,
        timeout: timeoutMillis,
        maxNetworkRetries: 0,
        telemetry: false,
        appInfo: { name: "Kassa", url: "https://github.com/kassa" },
        // Sends the calling span's `traceparent` (issue 14 §1).
        httpClient: Tracing.carryingTraceparent(Stripe.createNodeHttpClient())
      })

    // Clients by link id, oldest first; bounded, so a server with many links holds a few hundred agents at most.
    const clients = new Map<string, Stripe>()
    const maxClients = 256
    const clientFor = (link: LinkAccess) =>
      Effect.suspend(() => {
        const cached = clients.get(link.id)
        if (cached !== undefined) return Effect.succeed(cached)
        return Effect.map(link.secretKey, (key) => {
          const client = makeClient(key)
          clients.set(link.id, client)
          if (clients.size > maxClients) {
            const oldest = clients.keys().next()
            if (oldest.done !== true) clients.delete(oldest.value)
          }
          return client
        })
      })

    /**
     * One SDK call as an Effect: failures sorted by {@link classify}. The SDK's own timeout bounds it; the outer
     * bound (a second longer) only matters if the SDK ever failed to honour its own.
     */
    const call = <A, B>(
      client: Stripe,
      run: (client: Stripe) => Promise<A>,
      onAnswer: (answer: A) => B
    ): Effect.Effect<B | NoAnswer, ProviderRefused> =>
      Effect.flatMap(
        Tracing.withTraceparent(() => withoutCallSite(() => run(client))),
        (traced) => Effect.tryPromise({ try: traced, catch: (error) => error })
      ).pipe(
        Effect.map(onAnswer),
        Effect.catch((error) => classify(error)),
        Effect.timeoutOrElse({
          duration: Duration.sum(timeout, Duration.seconds(1)),
          orElse: () => Effect.succeed(noAnswer("timeout"))
        })
      )

    const withLink = <A, B>(link: LinkAccess, run: (client: Stripe) => Promise<A>, onAnswer: (answer: A) => B) =>
      Effect.flatMap(clientFor(link), (client) => call(client, run, onAnswer))

    const read = Effect.fn("StripeConnector.read")(function* (link: LinkAccess, checkoutId: string) {
      return yield* withLink(
        link,
        (stripe) => stripe.checkout.sessions.retrieve(checkoutId, { expand: ["payment_intent"] }),
        checkoutReading
      )
    })

    return ProviderConnector.of({
      provider: "stripe",
      checkoutWindow,
      verifyLink: Effect.fn("StripeConnector.verifyLink")(function* (secretKey) {
        const client = makeClient(secretKey)
        return yield* call(
          client,
          (stripe) => stripe.accounts.retrieve(null),
          (account) => ({
            _tag: "Account" as const,
            accountId: account.id,
            // The account object has no mode; the key has (https://docs.stripe.com/keys#obtain-api-keys).
            livemode: /^[sr]k_live_/.test(Redacted.value(secretKey))
          })
        )
      }),
      registerWebhook: Effect.fn("StripeConnector.registerWebhook")(function* (link, endpointUrl) {
        return yield* withLink(
          link,
          (stripe) =>
            stripe.webhookEndpoints.create(
              {
                url: endpointUrl,
                enabled_events: [...subscribedEvents],
                // Events in the shape this file reads, whatever the account's default version.
                api_version: apiVersion,
                description: "Kassa",
                metadata: { kassa_link_id: link.id }
              },
              { idempotencyKey: `kassa-webhook-${link.id}` }
            ),
          (endpoint) => ({
            _tag: "Webhook" as const,
            endpointId: endpoint.id,
            secret: Redacted.make(endpoint.secret ?? ""),
            livemode: endpoint.livemode
          })
        )
      }),
      retireWebhook: Effect.fn("StripeConnector.retireWebhook")(function* (link, endpointId) {
        const retired = { _tag: "Retired" as const }
        return yield* withLink(
          link,
          (stripe) => stripe.webhookEndpoints.del(endpointId, {}, { idempotencyKey: `kassa-retire-${endpointId}` }),
          () => retired
        ).pipe(
          // Already gone (deleted in Stripe's dashboard): the intent holds.
          Effect.catchIf(
            (refused) => refused.code === "resource_missing",
            () => Effect.succeed(retired)
          )
        )
      }),
      open: Effect.fn("StripeConnector.open")(function* (link, request) {
        const locale = stripeLocale(request.locale)
        const price = { currency: request.currency.toLowerCase(), unit_amount: request.amount }
        const params: Stripe.Checkout.SessionCreateParams = {
          mode: "payment",
          line_items: [{ price_data: { ...price, product_data: { name: request.name } }, quantity: 1 }],
          client_reference_id: request.paymentId,
          metadata: { kassa_payment_id: request.paymentId },
          payment_intent_data: { metadata: { kassa_payment_id: request.paymentId } },
          success_url: request.returnUrl,
          cancel_url: request.returnUrl,
          expires_at: Math.floor(DateTime.toEpochMillis(request.expiresAt) / 1000),
          // §10's `payment_method_types`; under the pinned API version the parameter has this name.
          allowed_payment_method_types: [request.method],
          ...(request.customerEmail === null ? {} : { customer_email: request.customerEmail }),
          ...(locale === undefined ? {} : { locale })
        }
        return yield* withLink(
          link,
          (stripe) => stripe.checkout.sessions.create(params, { idempotencyKey: request.idempotencyKey }),
          (session) => ({
            _tag: "Opened" as const,
            checkoutId: session.id,
            url: session.url ?? "",
            expiresAt: fromUnix(session.expires_at)
          })
        )
      }),
      read,
      findCheckouts: Effect.fn("StripeConnector.findCheckouts")(function* (link, paymentId, window) {
        // Checkout Sessions cannot be searched by metadata (https://docs.stripe.com/search#supported-query-fields-for-each-resource
        // lists no sessions), so the sessions created in the window are listed
        // (https://docs.stripe.com/api/checkout/sessions/list#list_checkout_sessions-created) and matched by
        // `client_reference_id` / `metadata[kassa_payment_id]`. At most 10 pages of 100: a create's window is minutes.
        const params: Stripe.Checkout.SessionListParams = {
          created: {
            gte: Math.floor(DateTime.toEpochMillis(window.from) / 1000),
            lte: Math.ceil(DateTime.toEpochMillis(window.to) / 1000)
          },
          limit: 100,
          expand: ["data.payment_intent"]
        }
        return yield* withLink(
          link,
          async (stripe) => {
            const found: Array<Stripe.Checkout.Session> = []
            let startingAfter: string | undefined
            for (let page = 0; page < 10; page++) {
              const list = await stripe.checkout.sessions.list(
                startingAfter === undefined ? params : { ...params, starting_after: startingAfter }
              )
              for (const session of list.data) {
                if (session.client_reference_id === paymentId || session.metadata?.kassa_payment_id === paymentId) {
                  found.push(session)
                }
              }
              const last = list.data.at(-1)
              if (!list.has_more || last === undefined) break
              startingAfter = last.id
            }
            return found
          },
          (sessions) => ({
            _tag: "Found" as const,
            checkouts: sessions.map((session) => ({ checkoutId: session.id, reading: checkoutReading(session) }))
          })
        )
      }),
      listRefunds: Effect.fn("StripeConnector.listRefunds")(function* (link, providerPaymentId) {
        return yield* withLink(
          link,
          async (stripe) => {
            const ids: Array<string> = []
            // A payment has few refunds; Stripe caps them anyway by the amount. Pages of 100, newest first.
            for await (const refund of stripe.refunds.list({ payment_intent: providerPaymentId, limit: 100 })) {
              ids.push(refund.id)
              if (ids.length >= 1000) break
            }
            return ids.reverse()
          },
          (ids) => ({ _tag: "Refunds" as const, ids })
        )
      }),
      close: Effect.fn("StripeConnector.close")(function* (link, checkoutId) {
        return yield* withLink(
          link,
          (stripe) =>
            stripe.checkout.sessions.expire(
              checkoutId,
              { expand: ["payment_intent"] },
              { idempotencyKey: `kassa-expire-${checkoutId}` }
            ),
          checkoutReading
        ).pipe(
          // Only an open session can be expired: one already complete or expired is read instead, so the caller
          // applies what Stripe says now (decisions §10, "Expiry and cancel ask Stripe first").
          Effect.catchIf(
            (refused) => refused.status === 400 && refused.field !== "secret_key",
            () => read(link, checkoutId)
          )
        )
      }),
      refund: Effect.fn("StripeConnector.refund")(function* (link, request) {
        return yield* withLink(
          link,
          (stripe) =>
            stripe.refunds.create(
              {
                payment_intent: request.providerPaymentId,
                amount: request.amount,
                metadata: { kassa_refund_id: request.refundId }
              },
              { idempotencyKey: request.refundId }
            ),
          (refund) => refundReading(refund, request.refundId)
        )
      }),
      readRefund: Effect.fn("StripeConnector.readRefund")(function* (link, providerRefundId, unknownAs) {
        return yield* withLink(
          link,
          (stripe) => stripe.refunds.retrieve(providerRefundId),
          (refund) => refundReading(refund, unknownAs)
        )
      }),
      parseEvent: Effect.fn("StripeConnector.parseEvent")(function* (link, rawBody, headers) {
        const signature = header(headers, "stripe-signature")
        if (signature === undefined || signature === "") {
          return yield* new EventRejected({ message: "The Stripe-Signature header is missing." })
        }
        const secret = yield* link.endpointSecret
        const receivedAt = yield* Clock.currentTimeMillis
        const event = yield* Effect.try({
          try: () =>
            Stripe.webhooks.constructEvent(
              rawBody,
              signature,
              Redacted.value(secret),
              signatureToleranceSeconds,
              undefined,
              receivedAt
            ),
          catch: (error) =>
            new EventRejected({
              message:
                error instanceof Stripe.errors.StripeSignatureVerificationError
                  ? `The Stripe-Signature does not verify: ${error.message}`
                  : "The event is not valid JSON."
            })
        })
        return { id: event.id, type: event.type, livemode: event.livemode, subject: eventSubject(event) }
      })
    })
  })
)

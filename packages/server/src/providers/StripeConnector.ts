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
import { Clock, Context, DateTime, Duration, Effect, Layer, Redacted, Result } from "effect"
import type Stripe from "stripe"
import { InvalidSetting, ServerConfig } from "../config/ServerConfig.ts"
import * as Tracing from "../observability/Tracing.ts"
import * as LinkClients from "./LinkClients.ts"
import {
  EventRejected,
  type FoundCheckout,
  type LinkAccess,
  type NoAnswer,
  noAnswer,
  type OpenRequest,
  ProviderConnector,
  ProviderRefused
} from "./ProviderConnector.ts"
import {
  checkoutReading,
  decodeEvent,
  disputeEvents,
  fromUnix,
  idOf,
  refundReading,
  wasDisputed
} from "./stripe/StripeObjects.ts"

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
  "refund.failed",
  // Disputes take money back after a payment (issue 21 §6): the payment's checkout is read again.
  ...disputeEvents
] as const

/**
 * A Checkout Session expires 30 minutes to 24 hours after its creation
 * (https://docs.stripe.com/api/checkout/sessions/create#create_checkout_session-expires_at); a minute's margin each
 * side covers the call's transit.
 */
const checkoutWindow = { min: Duration.minutes(31), max: Duration.subtract(Duration.hours(24), Duration.minutes(1)) }

/**
 * What a session read expands: its PaymentIntent (a failed delayed method shows there) and that intent's charge
 * (`disputed` says whether its disputes need listing). https://docs.stripe.com/expand
 */
const sessionExpand = ["payment_intent.latest_charge"]

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
        ? `Stripe refused the key for this request (${error.message}). A restricted key needs write access to Checkout Sessions, Webhook Endpoints and Refunds, and read access to PaymentIntents, Charges, Disputes and the account (connected_account_read).`
        : `Stripe refused the key: ${error.message}`,
    field: "secret_key",
    code: error.code ?? null,
    status: error.statusCode ?? 401
  })

/** The SDK's class: its constructor, its errors and its webhook signature check. */
type StripeSdk = typeof Stripe

/**
 * The SDK, imported on first use (as the Mollie connector's is): its import costs ~0.3 s of CPU, which a server with
 * no Stripe link (every test-mode-only server, and every test file that starts one) never pays at its start. (The
 * memory it holds in a running server is small: idle RSS ~2 MB lower without it, issue 23.)
 */
const importSdk = Effect.promise(() => import("stripe").then((module) => module.default))

/** Sorts an SDK failure into "no answer" (a success value) or a refusal. Anything else is a defect. */
const classify = (sdk: StripeSdk, error: unknown): Effect.Effect<NoAnswer, ProviderRefused> => {
  if (!(error instanceof sdk.errors.StripeError)) return Effect.die(error)
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

/**
 * The product name Stripe shows on its page: the caller's (`description`, else `order_reference`). Stripe refuses an
 * empty `product_data[name]` (an empty form value means "unset": https://docs.stripe.com/error-codes#parameter-invalid-empty),
 * so a blank one never leaves here.
 */
export const productName = (request: Pick<OpenRequest, "name" | "paymentId">): string =>
  request.name.trim() === "" ? `Payment ${request.paymentId}` : request.name

/**
 * The words for a session that cannot offer the payment's method: since the pinned API version Stripe filters
 * `allowed_payment_method_types` by the account's enabled methods and the currency instead of refusing
 * (https://docs.stripe.com/changelog/endive/2026-09-30/remove-payment-method-types-checkout-sessions).
 */
const methodUnavailable = (request: OpenRequest) =>
  new ProviderRefused({
    message: `Stripe does not offer the payment method "${request.method}" for this payment: the Stripe account has not enabled it, or it is not available in ${request.currency}. Enable it in Stripe's Dashboard (Settings → Payment methods) or use another method or currency.`,
    field: "method",
    code: null,
    // Stripe answered the create (200) with a session that leaves the method out.
    status: 200
  })

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
export const make = Effect.gen(function* () {
  const config = yield* ServerConfig
  const url = new URL(config.stripeApiUrl)
  const protocol = url.protocol === "http:" ? ("http" as const) : ("https" as const)
  const port = url.port === "" ? (protocol === "http" ? 80 : 443) : Number(url.port)
  const timeout = yield* CallTimeout
  if (config.environment === "production" && !Duration.equals(timeout, callTimeout)) {
    return yield* Effect.die(new InvalidSetting("a shortened Stripe call bound is for tests only"))
  }
  const timeoutMillis = Math.max(1, Math.round(Duration.toMillis(timeout)))

  const loadSdk = yield* Effect.cached(importSdk)

  const makeClient = (sdk: StripeSdk, key: Redacted.Redacted<string>) =>
    new sdk(Redacted.value(key), {
      apiVersion,
      protocol,
      host: url.hostname,
      port,
      timeout: timeoutMillis,
      maxNetworkRetries: 0,
      telemetry: false,
      appInfo: { name: "Kassa", url: "https://github.com/kassa" },
      // Sends the calling span's `traceparent` (issue 14 §1).
      httpClient: Tracing.carryingTraceparent(sdk.createNodeHttpClient())
    })

  // Clients by link id, oldest first; bounded, so a server with many links holds a few hundred agents at most.
  const clientFor = LinkClients.make((link: LinkAccess) =>
    Effect.flatMap(loadSdk, (sdk) => Effect.map(link.secretKey, (key) => makeClient(sdk, key)))
  )

  /**
   * One SDK call as an Effect: failures sorted by {@link classify}. The SDK's own timeout bounds it; the outer
   * bound (a second longer) only matters if the SDK ever failed to honour its own.
   */
  const call = <A, B>(
    sdk: StripeSdk,
    client: Stripe,
    run: (client: Stripe) => Promise<A>,
    onAnswer: (answer: A) => B
  ): Effect.Effect<B | NoAnswer, ProviderRefused> =>
    Effect.flatMap(
      Tracing.withTraceparent(() => withoutCallSite(() => run(client))),
      (traced) => Effect.tryPromise({ try: traced, catch: (error) => error })
    ).pipe(
      Effect.map(onAnswer),
      Effect.catch((error) => classify(sdk, error)),
      Effect.timeoutOrElse({
        duration: Duration.sum(timeout, Duration.seconds(1)),
        orElse: () => Effect.succeed(noAnswer("timeout"))
      })
    )

  const withLink = <A, B>(link: LinkAccess, run: (client: Stripe) => Promise<A>, onAnswer: (answer: A) => B) =>
    Effect.flatMap(loadSdk, (sdk) => Effect.flatMap(clientFor(link), (client) => call(sdk, client, run, onAnswer)))

  /** A session read with its disputes, listed only when its charge was ever disputed (most reads make one call). */
  const withDisputes = async (stripe: Stripe, session: Stripe.Checkout.Session) => {
    const intent = idOf(session.payment_intent)
    if (intent === null || !wasDisputed(session)) return checkoutReading(session)
    const disputes: Array<Stripe.Dispute> = []
    // A charge has a dispute or two (an inquiry, then its chargeback); the bound only guards against a runaway list.
    for await (const dispute of stripe.disputes.list({ payment_intent: intent, limit: 100 })) {
      disputes.push(dispute)
      if (disputes.length >= 100) break
    }
    return checkoutReading(session, disputes)
  }

  // The same parameters and key wherever a session is expired, so a repeat is Stripe's replay, never a conflict.
  const expireSession = (stripe: Stripe, checkoutId: string) =>
    stripe.checkout.sessions.expire(
      checkoutId,
      { expand: sessionExpand },
      { idempotencyKey: `kassa-expire-${checkoutId}` }
    )

  const read = Effect.fn("StripeConnector.read")(function* (link: LinkAccess, checkoutId: string) {
    return yield* withLink(
      link,
      async (stripe) =>
        withDisputes(stripe, await stripe.checkout.sessions.retrieve(checkoutId, { expand: sessionExpand })),
      (reading) => reading
    )
  })

  return ProviderConnector.of({
    provider: "stripe",
    checkoutWindow,
    verifyLink: Effect.fn("StripeConnector.verifyLink")(function* (secretKey) {
      const sdk = yield* loadSdk
      return yield* call(
        sdk,
        makeClient(sdk, secretKey),
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
        line_items: [{ price_data: { ...price, product_data: { name: productName(request) } }, quantity: 1 }],
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
      const created = yield* withLink(
        link,
        (stripe) => stripe.checkout.sessions.create(params, { idempotencyKey: request.idempotencyKey }),
        (session) => ({ _tag: "Session" as const, session })
      )
      if (created._tag === "NoAnswer") return created
      const { session } = created
      // Stripe leaves out a method the account or the currency cannot take (see methodUnavailable): such a session
      // is expired at once, so nobody reaches a page without the payment's method. A retry replays both calls.
      if (!(session.payment_method_types ?? []).includes(request.method)) {
        yield* Effect.ignore(
          withLink(
            link,
            (stripe) => expireSession(stripe, session.id),
            () => undefined
          )
        )
        return yield* methodUnavailable(request)
      }
      return {
        _tag: "Opened" as const,
        checkoutId: session.id,
        url: session.url ?? "",
        expiresAt: fromUnix(session.expires_at),
        // The PaymentIntent exists only once the customer pays (https://docs.stripe.com/changelog/2022-08-01).
        providerPaymentId: null
      }
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
        expand: sessionExpand.map((field) => `data.${field}`)
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
          const checkouts: Array<FoundCheckout> = []
          for (const session of found) {
            checkouts.push({ checkoutId: session.id, reading: await withDisputes(stripe, session) })
          }
          return checkouts
        },
        (checkouts) => ({ _tag: "Found" as const, checkouts })
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
      // Stripe has no cancel of its own: a close is an expiry, answered `Expired` (never `Cancelled` or
      // `Unclosable`: Stripe expires any open session on request).
      return yield* withLink(
        link,
        async (stripe) => withDisputes(stripe, await expireSession(stripe, checkoutId)),
        (reading) => reading
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
    // Stripe reads a refund by its own id alone; the payment named beside it is not needed.
    readRefund: Effect.fn("StripeConnector.readRefund")(function* (link, target, unknownAs) {
      return yield* withLink(
        link,
        (stripe) => stripe.refunds.retrieve(target.providerRefundId),
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
      const sdk = yield* loadSdk
      const event = yield* Effect.try({
        try: () =>
          sdk.webhooks.constructEvent(
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
              error instanceof sdk.errors.StripeSignatureVerificationError
                ? `The Stripe-Signature does not verify: ${error.message}`
                : "The event is not valid JSON."
          })
      })
      // Validly signed is not well formed: a body that is no event (`[]`, no `data`, a numeric or NUL-laden id…) is
      // refused here, before any of it reaches a query.
      const decoded = decodeEvent(event)
      if (Result.isFailure(decoded)) return yield* new EventRejected({ message: decoded.failure })
      return decoded.success
    })
  })
})

/** {@link make} as the one {@link ProviderConnector} (the connector's own tests). */
export const layer = Layer.effect(ProviderConnector, make)

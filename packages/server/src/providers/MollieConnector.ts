/**
 * The Mollie implementation of {@link ProviderConnector} (decisions §11), through Mollie's official
 * `mollie-api-typescript` SDK (the choice and its measurements: docs/decisions.md, "Mollie: which official SDK"). It
 * speaks through Kassa's own transport (mollie/MollieTransport.ts: node's http client, kept-alive connections, cheaper
 * than the SDK's global fetch), which takes `http:` too, so `KASSA_MOLLIE_API_URL` may be a plain-http fake in tests;
 * every call takes an AbortSignal.
 *
 * - One SDK client per link, made when the link is first used (its key opened then), in a small bounded cache, with
 *   the link's mode read from its key (`live_…`/`test_…`: the key fixes mode and profile, research mollie.md §7).
 * - One bounded attempt per call: the SDK's retries are off and {@link CallTimeout} aborts the request; Kassa retries
 *   itself (reconciler, expiry, clean-up), always with its own Idempotency-Key.
 * - Never `testmode` or `profileId`: with an API key Mollie answers 422 (mollie.md §7); the client is given neither,
 *   so the SDK's global-field hook adds nothing.
 * - Errors: no answer within the bound, connection errors, 5xx, 429 and a 409 for a request still running under the
 *   same key (mollie.md §6) are "no answer"; 401/403 are a refused key (`secret_key`); other 4xx are refusals.
 */
import { Context, DateTime, Duration, Effect, Layer, Redacted } from "effect"
import type { Client } from "mollie-api-typescript"
import type * as MollieModels from "mollie-api-typescript/models"
import { InvalidSetting, ServerConfig } from "../config/ServerConfig.ts"
import * as Tracing from "../observability/Tracing.ts"
import * as LinkClients from "./LinkClients.ts"
import {
  checkoutReading,
  checkoutWindow,
  classify,
  type ErrorClasses,
  instant,
  mollieAmount,
  mollieLocale,
  mollieMethod,
  type Payment,
  pagesOf,
  type Refund,
  refundReading
} from "./mollie/MollieTerms.ts"
import { nodeFetcher } from "./mollie/MollieTransport.ts"
import {
  EventRejected,
  type LinkAccess,
  type NoAnswer,
  noAnswer,
  ProviderConnector,
  ProviderRefused
} from "./ProviderConnector.ts"

/** How long a Mollie call may take before it is "no answer" (decisions §11). */
export const callTimeout = Duration.seconds(10)

/**
 * The bound of the server's Mollie calls: {@link callTimeout} unless a test shortens it. No setting reaches it, and a
 * production start with another value stops.
 */
export const CallTimeout = Context.Reference<Duration.Duration>("@kassa/server/providers/MollieConnector/CallTimeout", {
  defaultValue: () => callTimeout
})

/**
 * The SDK, imported on first use: its import costs about 270 ms of CPU and 27 MB of heap (it loads every model of
 * Mollie's API; docs/decisions.md, "Mollie: which official SDK"), which a server with no Mollie link never pays.
 */
const loadSdk = Effect.promise(async () => {
  const [{ Client, HTTPClient }, errors] = await Promise.all([
    import("mollie-api-typescript"),
    import("mollie-api-typescript/models/errors")
  ])
  return { Client, HTTPClient, errors: errors as ErrorClasses }
})

/** A link's client and the mode its key is for. */
interface LinkClient {
  readonly client: Client
  readonly livemode: boolean
}

/** Mollie's form ping: `id=tr_…` and nothing else that matters (mollie.md §4). */
const pingId = /^tr_[A-Za-z0-9]{1,64}$/

/** The connector with the settings' `KASSA_MOLLIE_API_URL`, every call bounded by {@link CallTimeout}. */
export const make = Effect.gen(function* () {
  const config = yield* ServerConfig
  const timeout = yield* CallTimeout
  if (config.environment === "production" && !Duration.equals(timeout, callTimeout)) {
    return yield* Effect.die(new InvalidSetting("a shortened Mollie call bound is for tests only"))
  }

  // The SDK's requests travel over node's http client with kept-alive connections (MollieTransport.ts says why).
  const transport = nodeFetcher()
  yield* Effect.addFinalizer(() => Effect.sync(transport.close))
  const sdk = yield* Effect.cached(
    Effect.map(loadSdk, (loaded) => ({ ...loaded, httpClient: new loaded.HTTPClient({ fetcher: transport.fetcher }) }))
  )
  const makeClient = (key: Redacted.Redacted<string>) =>
    Effect.map(
      sdk,
      ({ Client, httpClient }): LinkClient => ({
        client: new Client({
          security: { apiKey: Redacted.value(key) },
          serverURL: config.mollieApiUrl,
          httpClient,
          // One attempt per call (the module comment); the SDK's default retries 429 and 5xx for up to 7.5 s.
          retryConfig: { strategy: "none" }
        }),
        livemode: Redacted.value(key).startsWith("live_")
      })
    )

  const clientFor = LinkClients.make((link: LinkAccess) => Effect.flatMap(link.secretKey, makeClient))

  /**
   * One SDK call as an Effect: the request carries the fiber's AbortSignal, so the bound's interruption aborts it,
   * and the calling span's `traceparent`; failures sorted by {@link classify}.
   */
  const call = <A, B>(
    client: Client,
    run: (client: Client, options: { readonly signal: AbortSignal; readonly headers: HeadersInit }) => Promise<A>,
    onAnswer: (answer: A) => B,
    operation: "refund" | "other" = "other"
  ): Effect.Effect<B | NoAnswer, ProviderRefused> =>
    Effect.flatMap(Tracing.currentTraceparent, (traceparent) =>
      Effect.tryPromise({
        try: (signal) => run(client, { signal, headers: traceparent === undefined ? {} : { traceparent } }),
        catch: (error) => error
      })
    ).pipe(
      Effect.map(onAnswer),
      // The SDK is loaded by now (the call needed its client): its error classes sort the failure.
      Effect.catch((error) => Effect.flatMap(sdk, ({ errors }) => classify(errors, operation)(error))),
      Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.succeed(noAnswer("timeout")) })
    )

  const withLink = <A, B>(
    link: LinkAccess,
    run: (client: Client, options: { readonly signal: AbortSignal; readonly headers: HeadersInit }) => Promise<A>,
    onAnswer: (answer: A) => B,
    operation: "refund" | "other" = "other"
  ) => Effect.flatMap(clientFor(link), ({ client }) => call(client, run, onAnswer, operation))

  /**
   * The whole of an operation that makes two calls (close, refund) within the one bound, so a caller's deadline
   * (a request's 15 s) is never outlived; a call cut short is no answer, and its retry carries the same key.
   */
  const bounded = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.timeoutOrElse(effect, { duration: timeout, orElse: () => Effect.succeed(noAnswer("timeout")) })

  const read = Effect.fn("MollieConnector.read")(function* (link: LinkAccess, checkoutId: string) {
    return yield* withLink(
      link,
      (mollie, options) => mollie.payments.get({ paymentId: checkoutId }, options),
      checkoutReading
    )
  })

  return ProviderConnector.of({
    provider: "mollie",
    checkoutWindow,
    verifyLink: Effect.fn("MollieConnector.verifyLink")(function* (secretKey) {
      // The cheapest check that names the profile and its mode (mollie.md §7).
      const { client } = yield* makeClient(secretKey)
      return yield* call(
        client,
        (mollie, options) => mollie.profiles.getCurrent({}, options),
        (profile) => ({
          _tag: "Account" as const,
          accountId: profile.id,
          // The profile as read with this key says the key's mode (`live` for a `live_` key, mollie.md §7).
          livemode: profile.mode === "live"
        })
      )
    }),
    // The classic webhook is named on each payment (decisions §11): nothing to create or delete at Mollie.
    registerWebhook: () => Effect.succeed({ _tag: "PerPayment" as const }),
    retireWebhook: () => Effect.succeed({ _tag: "Retired" as const }),
    open: Effect.fn("MollieConnector.open")(function* (link, request) {
      const method = mollieMethod(request.method)
      if (method === undefined) {
        return yield* new ProviderRefused({
          message: `Mollie has no payment method "${request.method}".`,
          field: "method",
          code: null,
          status: 422
        })
      }
      const locale = mollieLocale(request.locale)
      // No customer e-mail: Mollie takes one only inside a billing address, which Kassa does not have.
      const paymentRequest: MollieModels.PaymentRequest = {
        amount: mollieAmount(request.amount, request.currency),
        description: request.name.slice(0, 255),
        redirectUrl: request.returnUrl,
        cancelUrl: request.returnUrl,
        webhookUrl: request.webhookUrl,
        method,
        metadata: { kassa_payment_id: request.paymentId },
        ...(locale === undefined ? {} : { locale: locale as MollieModels.Locale2 })
      }
      return yield* withLink(
        link,
        (mollie, options) =>
          mollie.payments.create({ idempotencyKey: request.idempotencyKey, paymentRequest }, options),
        (payment) => ({
          _tag: "Opened" as const,
          checkoutId: payment.id,
          providerPaymentId: payment.id,
          url: payment.links.checkout?.href ?? "",
          expiresAt: instant(payment.expiresAt) ?? request.expiresAt
        })
      )
    }),
    read,
    findCheckouts: Effect.fn("MollieConnector.findCheckouts")(function* (link, paymentId, window) {
      // Payments cannot be searched by metadata: the newest are listed (newest first) back to the window's start and
      // matched by `metadata.kassa_payment_id`. At most 10 pages of 250: a create's window is minutes. Mollie's
      // `createdAt` has whole seconds and Mollie's clock is not Kassa's, so the listing goes a minute further back.
      const from = DateTime.toEpochMillis(window.from) - 60_000
      return yield* withLink(
        link,
        (mollie, options) =>
          pagesOf(
            async (cursor) => {
              const { result } = await mollie.payments.list({ limit: 250, sort: "desc", from: cursor }, options)
              return { items: result.embedded.payments ?? [], links: result.links }
            },
            (payment: Payment) => Date.parse(payment.createdAt) < from
          ),
        (payments) => ({
          _tag: "Found" as const,
          checkouts: payments
            .filter((payment) => {
              const metadata = payment.metadata
              return (
                typeof metadata === "object" &&
                metadata !== null &&
                (metadata as Record<string, unknown>).kassa_payment_id === paymentId
              )
            })
            .map((payment) => ({ checkoutId: payment.id, reading: checkoutReading(payment) }))
        })
      )
    }),
    close: Effect.fn("MollieConnector.close")(function* (link, checkoutId) {
      const { client } = yield* clientFor(link)
      const payment = yield* call(
        client,
        (mollie, options) => mollie.payments.get({ paymentId: checkoutId }, options),
        (found) => found
      )
      if ("_tag" in payment) return payment
      const now = checkoutReading(payment)
      if (now.state._tag !== "Open") return now
      // Only a payment Mollie calls cancelable may be cancelled (mollie.md §3: open bank transfers, direct debits);
      // an open iDEAL or card checkout stays payable until Mollie's own `expiresAt`.
      if (payment.isCancelable !== true) {
        return { _tag: "Unclosable" as const, expiresAt: now.providerExpiresAt ?? (yield* DateTime.now) }
      }
      return yield* call(
        client,
        (mollie, options) => mollie.payments.cancel({ paymentId: checkoutId }, options),
        checkoutReading
      ).pipe(
        // Mollie refuses a cancel it no longer allows (422, mollie.md §3): the payment moved on, so read it again.
        Effect.catchIf(
          (refused) => refused.status === 422 && refused.field !== "secret_key",
          () => read(link, checkoutId)
        )
      )
    }, bounded),
    refund: Effect.fn("MollieConnector.refund")(function* (link, request) {
      return yield* withLink(
        link,
        (mollie, options) =>
          mollie.refunds.create(
            {
              paymentId: request.providerPaymentId,
              idempotencyKey: request.refundId,
              refundRequest: {
                amount: mollieAmount(request.amount, request.currency),
                metadata: { kassa_refund_id: request.refundId }
              }
            },
            options
          ),
        (refund) => refundReading(refund, request.refundId),
        "refund"
      )
    }, bounded),
    readRefund: Effect.fn("MollieConnector.readRefund")(function* (link, target, unknownAs) {
      const found = yield* withLink(
        link,
        async (mollie, options): Promise<Refund | undefined> => {
          const paymentId = target.providerPaymentId
          if (paymentId !== null) {
            return mollie.refunds.get({ paymentId, refundId: target.providerRefundId }, options)
          }
          // A refund is read under its payment; without the payment's id the account's refunds are listed (newest
          // first, GET /v2/refunds) until it turns up: at most 10 pages of 250.
          let match: Refund | undefined
          await pagesOf(
            async (cursor) => {
              const { result } = await mollie.refunds.all({ limit: 250, sort: "desc", from: cursor }, options)
              return { items: result.embedded.refunds ?? [], links: result.links }
            },
            (refund: Refund) => {
              if (refund.id === target.providerRefundId) match = refund
              return match !== undefined
            }
          )
          return match
        },
        (refund) => refund
      )
      if (found === undefined) {
        return yield* new ProviderRefused({
          message: `Mollie lists no refund ${target.providerRefundId} under this key.`,
          field: null,
          code: "not_found",
          status: 404
        })
      }
      if ("_tag" in found) return found
      return refundReading(found, unknownAs)
    }),
    listRefunds: Effect.fn("MollieConnector.listRefunds")(function* (link, providerPaymentId) {
      return yield* withLink(
        link,
        (mollie, options) =>
          pagesOf(
            async (cursor) => {
              const { result } = await mollie.refunds.list(
                { paymentId: providerPaymentId, limit: 250, from: cursor },
                options
              )
              return { items: result.embedded.refunds ?? [], links: result.links }
            },
            () => false
          ),
        // Oldest first: Mollie lists newest first, and its `createdAt` has whole seconds, so the list is reversed
        // and then (stably) sorted by time.
        (refunds) => ({
          _tag: "Refunds" as const,
          ids: [...refunds]
            .reverse()
            .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))
            .map((refund) => refund.id)
        })
      )
    }),
    parseEvent: Effect.fn("MollieConnector.parseEvent")(function* (link, rawBody) {
      // Unsigned (mollie.md §4): only the form's `id` is read; the caller reads the payment before applying anything.
      const id = new URLSearchParams(rawBody).get("id")
      if (id === null || !pingId.test(id)) {
        return yield* new EventRejected({ message: "The body names no Mollie payment (id=tr_…)." })
      }
      // A ping carries no mode; the link's key fixes it (mollie.md §7), read once with the link's client.
      const { livemode } = yield* clientFor(link)
      return { id: null, type: "payment", livemode, subject: { _tag: "CheckoutChanged" as const, checkoutId: id } }
    })
  })
})

/** {@link make} as the one {@link ProviderConnector} (the connector's own tests). */
export {
  checkoutReading,
  duplicateRefundMessage,
  mollieAmount,
  mollieLocale,
  mollieMethod,
  refundReading
} from "./mollie/MollieTerms.ts"

export const layer = Layer.effect(ProviderConnector, make)

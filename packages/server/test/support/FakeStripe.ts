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
 *
 * This module is the fake's face and wiring; its parts are in fakeStripe/: the objects it keeps (Accounts, Sessions, Disputes,
 * PaymentIntents, Refunds, WebhookEndpoints), Events, the API (Routes, Api, Faults) and the HostedCheckout page.
 */
import { createServer } from "node:http"
import { makeAccounts } from "./fakeStripe/Accounts.ts"
import { makeApi, type RecordedRequest } from "./fakeStripe/Api.ts"
import { makeClock } from "./fakeStripe/Clock.ts"
import { makeDisputes } from "./fakeStripe/Disputes.ts"
import { type Delivery, type EventFault, makeEvents } from "./fakeStripe/Events.ts"
import { type Fault, makeFaults } from "./fakeStripe/Faults.ts"
import { makeHostedCheckout } from "./fakeStripe/HostedCheckout.ts"
import { clone, type JsonObject } from "./fakeStripe/Json.ts"
import { makePaymentIntents } from "./fakeStripe/PaymentIntents.ts"
import { makeRefunds } from "./fakeStripe/Refunds.ts"
import { makeRoutes } from "./fakeStripe/Routes.ts"
import { makeSessions, view } from "./fakeStripe/Sessions.ts"
import { makeWebhookEndpoints } from "./fakeStripe/WebhookEndpoints.ts"
import { freePort } from "./TestServer.ts"

export type { RecordedRequest } from "./fakeStripe/Api.ts"
export type { Delivery, EventFault } from "./fakeStripe/Events.ts"
export type { Fault } from "./fakeStripe/Faults.ts"
export { type Json, type JsonObject, parseForm } from "./fakeStripe/Json.ts"

export interface FakeStripeOptions {
  /** The API version stamped on events when the endpoint named none (the SDK's pinned version). */
  readonly apiVersion?: string
}

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
  /** Another key of an existing account (a rolled key): linking it links the same account again. */
  readonly addKey: (accountId: string, options?: { readonly restricted?: boolean }) => string
  /** Every API request, oldest first. */
  readonly requests: ReadonlyArray<RecordedRequest>
  readonly sessions: () => ReadonlyArray<JsonObject>
  /** The webhook endpoints Stripe keeps now, of every account (deleted ones are gone). */
  readonly webhookEndpoints: () => ReadonlyArray<JsonObject>
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
  /** The payer's bank disputes the payment (an `inquiry` moves no money); `closeDispute` decides it. */
  readonly dispute: (
    paymentIntentId: string,
    options?: { readonly amount?: number; readonly inquiry?: boolean }
  ) => JsonObject
  readonly closeDispute: (disputeId: string, outcome: "won" | "lost") => JsonObject
  /** The account (default: the first) switches a payment method off: Checkout no longer offers it. */
  readonly disableMethod: (method: string, accountId?: string) => void
  readonly close: () => Promise<void>
}

export const startFakeStripe = async (options: FakeStripeOptions = {}): Promise<FakeStripe> => {
  const port = await freePort()
  const host = "127.0.0.1"
  const base = `http://${host}:${port}`
  const clock = makeClock()
  const accounts = makeAccounts()
  const first = accounts.add()
  const endpoints = makeWebhookEndpoints(clock)
  const events = makeEvents({ clock, accounts, endpoints, apiVersion: options.apiVersion ?? null })
  const paymentIntents = makePaymentIntents(clock)
  const sessions = makeSessions({ clock, base, events, paymentIntents })
  const refunds = makeRefunds({ clock, events, paymentIntents })
  const disputes = makeDisputes({ clock, events, paymentIntents })
  const faults = makeFaults()
  const api = makeApi({
    base,
    accounts,
    faults,
    routes: makeRoutes({ endpoints, sessions, paymentIntents, refunds, disputes })
  })
  const hosted = makeHostedCheckout(sessions)

  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      const path = new URL(request.url ?? "/", base).pathname
      const hostedMatch = path.match(/^\/pay\/([^/]+)$/)
      if (hostedMatch !== null) return hosted(request, response, body, hostedMatch[1] ?? "")
      return api.handle(request, response, body)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))

  return {
    url: base,
    host,
    port,
    protocol: "http",
    secretKey: first.key,
    accountId: first.accountId,
    addAccount: accounts.add,
    addKey: accounts.addKey,
    requests: api.requests,
    sessions: () => sessions.stored().map((stored) => view(stored.object)),
    webhookEndpoints: endpoints.stored,
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
    events: events.events,
    deliveries: events.deliveries,
    inject: faults.inject,
    eventFault: events.eventFault,
    hold: events.hold,
    release: events.release,
    settled: events.settled,
    resend: events.resend,
    pay: (sessionId, customer = {}, payOptions = {}) =>
      sessions.complete(sessionId, customer, payOptions.delayed === true),
    settleDelayed: sessions.settleDelayed,
    now: () => clock.now,
    advance: (seconds) => {
      clock.now += seconds
      sessions.expireDue()
    },
    nextRefundStatus: refunds.nextStatus,
    settleRefund: (refundId, status) => refunds.change(refundId, status, ["pending"]),
    failSucceededRefund: (refundId) => refunds.change(refundId, "failed", ["succeeded"]),
    refundInDashboard: refunds.inDashboard,
    dispute: disputes.open,
    closeDispute: disputes.close,
    disableMethod: (method, accountId = first.accountId) => {
      const account = accounts.get(accountId)
      if (account === undefined) throw new Error(`no account ${accountId}`)
      account.disabledMethods.add(method)
    },
    close: async () => {
      api.dropHanging()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

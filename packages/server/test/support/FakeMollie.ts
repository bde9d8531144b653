/**
 * A stateful fake of the parts of Mollie's API that Kassa calls (decisions §11), for tests: Mollie cannot be reached
 * from here. It is reached through Mollie's own `mollie-api-typescript` SDK (the connector's), over plain HTTP on
 * 127.0.0.1, which is what `KASSA_MOLLIE_API_URL` points at in tests.
 *
 * Each behaviour imitated cites research/mollie.md and the Mollie documentation it draws on: keys and profiles
 * (fakeMollie/Profiles), payments with their lifetimes and `isCancelable` (Payments), refunds with the duplicate 409
 * (Refunds), idempotency and list pages (Api), the classic webhook's pings and retry schedule (Pings), and the test
 * checkout page where the tester picks the outcome (TestCheckout). Time is the fake's clock (`advance`).
 *
 * Knobs: refuse, fail or hang the next calls (`inject`, the same faults as the fake Stripe's), drop or repeat pings
 * (`pingFault`), change a payment directly (`setStatus`, `chargeBack`, `refundInDashboard`, `settleRefund`), and
 * count calls per endpoint (`calls`).
 */
import { createServer } from "node:http"
import { type Endpoint, makeApi, type RecordedRequest } from "./fakeMollie/Api.ts"
import { makePayments, type PaymentStatus } from "./fakeMollie/Payments.ts"
import { makePings, type Ping, type PingFault } from "./fakeMollie/Pings.ts"
import { makeProfiles, type Profile } from "./fakeMollie/Profiles.ts"
import { makeRefunds, type RefundStatus } from "./fakeMollie/Refunds.ts"
import { type JsonObject, makeClock } from "./fakeMollie/Shapes.ts"
import { makeTestCheckout } from "./fakeMollie/TestCheckout.ts"
import { type Fault, makeFaults } from "./fakeStripe/Faults.ts"
import { freePort } from "./TestServer.ts"

export type { Endpoint, RecordedRequest } from "./fakeMollie/Api.ts"
export type { PaymentStatus } from "./fakeMollie/Payments.ts"
export type { Ping, PingFault } from "./fakeMollie/Pings.ts"
export { retryMinutes } from "./fakeMollie/Pings.ts"
export type { RefundStatus } from "./fakeMollie/Refunds.ts"
export type { Fault } from "./fakeStripe/Faults.ts"

export interface FakeMollieOptions {
  /** Real milliseconds standing for one minute of Mollie's ping retry schedule (default 5: 26 h in about 8 s). */
  readonly minuteMs?: number
  /** Refuse a localhost `webhookUrl` as Mollie does (default false: tests' receivers are local). */
  readonly refuseLocalWebhookUrl?: boolean
}

export interface FakeMollie {
  /** `http://127.0.0.1:<port>`: what `KASSA_MOLLIE_API_URL` would be. */
  readonly url: string
  /** The default profile's `test_…` key and its id. */
  readonly apiKey: string
  readonly profileId: string
  /** Adds a profile with its own key: `live_…` when `livemode`. */
  readonly addProfile: (options?: { readonly livemode?: boolean }) => {
    readonly key: string
    readonly profileId: string
  }
  /** Deactivates a method on a profile (by key): creates with it are refused (422 `method`). */
  readonly deactivateMethod: (key: string, method: string) => void
  readonly requests: ReadonlyArray<RecordedRequest>
  /** How many calls reached an endpoint (faulted ones included). */
  readonly calls: (endpoint: Endpoint) => number
  readonly payment: (id: string) => JsonObject
  readonly payments: () => ReadonlyArray<JsonObject>
  readonly refund: (id: string) => JsonObject
  readonly pings: ReadonlyArray<Ping>

  readonly inject: (
    match: { readonly method?: string; readonly path: string | RegExp },
    fault: Fault,
    times?: number
  ) => void
  readonly pingFault: (fault: PingFault) => void
  /** Resolves when no ping is in flight or waiting for a retry. */
  readonly settled: () => Promise<void>

  /** A payment's status as the customer (or Mollie) moves it; pings as Mollie does. */
  readonly setStatus: (
    id: string,
    status: PaymentStatus,
    payer?: { readonly name?: string; readonly email?: string }
  ) => JsonObject
  /** A chargeback of `amount` cents (all by default): `amountChargedBack`, and a ping (mollie.md §4). */
  readonly chargeBack: (id: string, amount?: number) => JsonObject
  readonly nextRefundStatus: (status: RefundStatus) => void
  readonly settleRefund: (refundId: string, status: RefundStatus) => JsonObject
  /** A refund made in Mollie's dashboard (no metadata), `refunded` unless told otherwise. */
  readonly refundInDashboard: (paymentId: string, amount?: number, status?: RefundStatus) => JsonObject
  /** Moves the fake's clock; open payments past `expiresAt` expire, as at Mollie. */
  readonly advance: (seconds: number) => void
  readonly close: () => Promise<void>
}

export const startFakeMollie = async (options: FakeMollieOptions = {}): Promise<FakeMollie> => {
  const port = await freePort()
  const host = "127.0.0.1"
  const base = `http://${host}:${port}`
  const clock = makeClock()
  const profiles = makeProfiles(clock, base)
  const byKey = new Map<string, Profile>()
  const addProfile = (livemode = false) => {
    const profile = profiles.add({ livemode })
    byKey.set(profile.key, profile)
    return profile
  }
  const first = addProfile()
  const pings = makePings(options.minuteMs ?? 5)
  const changed = (payment: { readonly id: string; readonly object: JsonObject }) => {
    const url = payment.object.webhookUrl
    pings.send(payment.id, typeof url === "string" ? url : null)
  }
  const payments = makePayments({
    clock,
    base,
    changed,
    refuseLocalWebhookUrl: () => options.refuseLocalWebhookUrl === true
  })
  const refunds = makeRefunds({ clock, base, payments, changed })
  const faults = makeFaults()
  const api = makeApi({ base, now: clock.now, profiles, payments, refunds, faults })
  const checkout = makeTestCheckout(payments)

  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      const path = new URL(request.url ?? "/", base).pathname
      const page = path.match(/^\/checkout\/test-mode\/([^/]+)$/)
      if (page !== null) return checkout(request, response, body, page[1] ?? "")
      return api.handle(request, response, body)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))

  const stored = (id: string) => {
    const payment = payments.find(id)
    if (payment === undefined) throw new Error(`no payment ${id}`)
    return payment
  }

  return {
    url: base,
    apiKey: first.key,
    profileId: first.id,
    addProfile: (profileOptions = {}) => {
      const profile = addProfile(profileOptions.livemode === true)
      return { key: profile.key, profileId: profile.id }
    },
    deactivateMethod: (key, method) => {
      byKey.get(key)?.methods.delete(method)
    },
    requests: api.requests,
    calls: (endpoint) => api.requests.filter((request) => request.endpoint === endpoint).length,
    payment: (id) => stored(id).object,
    payments: () => payments.all().map((payment) => payment.object),
    refund: (id) => {
      const refund = refunds.find(id)
      if (refund === undefined) throw new Error(`no refund ${id}`)
      return refund.object
    },
    pings: pings.sent,
    inject: faults.inject,
    pingFault: pings.fault,
    settled: pings.settled,
    setStatus: (id, status, payer) => payments.setStatus(id, status, payer).object,
    chargeBack: (id, amount) => {
      const payment = stored(id)
      payment.chargedBack += amount ?? payment.minor - payment.refunded
      payments.recompute(payment)
      changed(payment)
      return payment.object
    },
    nextRefundStatus: refunds.nextStatus,
    settleRefund: (refundId, status) => refunds.setStatus(refundId, status).object,
    refundInDashboard: (paymentId, amount, status) => refunds.inDashboard(paymentId, amount, status).object,
    advance: (seconds) => {
      clock.advance(seconds)
      payments.expireDue()
    },
    close: async () => {
      pings.stop()
      api.dropHanging()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/**
 * Refunds (`/v2/payments/{id}/refunds…`, `/v2/refunds`): created against a paid payment's remaining amount, refused
 * as a duplicate (409) when the same amount was refunded on the payment within the hour, and moved through Mollie's
 * statuses by tests. Sources: research mollie.md §5 ([spec] refund-request, refund-status; [old] payments/refunds.rst).
 */
import type { Payments, StoredPayment } from "./Payments.ts"
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

export type RefundStatus = "queued" | "pending" | "processing" | "refunded" | "failed" | "canceled"

export interface StoredRefund {
  readonly id: string
  readonly payment: StoredPayment
  readonly minor: number
  readonly createdMs: number
  object: JsonObject
}

export interface Refunds {
  readonly create: (profile: Profile, paymentId: string, body: JsonObject) => StoredRefund
  readonly get: (profile: Profile, paymentId: string, refundId: string) => StoredRefund
  /** A payment's refunds, newest first. */
  readonly ofPayment: (profile: Profile, paymentId: string) => ReadonlyArray<StoredRefund>
  /** The profile's refunds, newest first (`GET /v2/refunds`). */
  readonly ofProfile: (profile: Profile) => ReadonlyArray<StoredRefund>
  readonly find: (refundId: string) => StoredRefund | undefined
  /** The status new refunds get (default `pending`: refunds run after a delay, [spec] cancel-refund). */
  readonly nextStatus: (status: RefundStatus) => void
  readonly setStatus: (refundId: string, status: RefundStatus) => StoredRefund
  /** A refund made in Mollie's dashboard: no metadata (mollie.md §5). */
  readonly inDashboard: (paymentId: string, minor?: number, status?: RefundStatus) => StoredRefund
}

const createFields = new Set([
  "amount",
  "description",
  "metadata",
  "externalReference",
  "reverseRouting",
  "routingReversals"
])

/** Statuses that hand the money back to the payment's remaining amount. */
const released: ReadonlySet<string> = new Set(["failed", "canceled"])

export const makeRefunds = (options: {
  readonly clock: Clock
  readonly base: string
  readonly payments: Payments
  /** Called when a refund reaches a status Mollie calls the payment's webhook for. */
  readonly changed: (payment: StoredPayment) => void
}): Refunds => {
  const { clock, base, payments, changed } = options
  const refunds: Array<StoredRefund> = []
  let initial: RefundStatus = "pending"

  const make = (payment: StoredPayment, minor: number, body: JsonObject, status: RefundStatus) => {
    const id = randomId("re")
    const refund: StoredRefund = {
      id,
      payment,
      minor,
      createdMs: clock.now(),
      object: {
        resource: "refund",
        id,
        mode: payment.profile.mode,
        description: typeof body.description === "string" ? body.description : "",
        amount: amountOf(minor, payment.currency),
        metadata: body.metadata ?? null,
        paymentId: payment.id,
        status,
        createdAt: clock.iso(),
        _links: {
          self: link(`${base}/v2/payments/${payment.id}/refunds/${id}`),
          payment: link(`${base}/v2/payments/${payment.id}`),
          documentation: link("https://docs.mollie.com/reference/create-refund", "text/html")
        }
      }
    }
    refunds.push(refund)
    payment.refunded += minor
    payments.recompute(payment)
    return refund
  }

  const setStatus = (refundId: string, status: RefundStatus) => {
    const refund = refunds.find((candidate) => candidate.id === refundId)
    if (refund === undefined) throw new Error(`no refund ${refundId}`)
    const before = String(refund.object.status)
    refund.object = { ...refund.object, status }
    if (released.has(status) && !released.has(before)) refund.payment.refunded -= refund.minor
    payments.recompute(refund.payment)
    // The payment's webhook is called when a refund reaches processing, refunded or failed (mollie.md §4, §5).
    if (status === "processing" || status === "refunded" || status === "failed") changed(refund.payment)
    return refund
  }

  return {
    create: (profile, paymentId, body) => {
      const payment = payments.get(profile, paymentId)
      for (const field of Object.keys(body)) {
        if (!createFields.has(field))
          throw unprocessable(`Non-existent body parameter "${field}" for this API call.`, field)
      }
      const amount = minorOf(body.amount)
      if (amount === null || amount.minor < 1 || amount.currency !== payment.currency) {
        throw unprocessable("The amount contains an invalid value or currency.", "amount")
      }
      if (payment.object.status !== "paid") throw unprocessable("The payment is not refundable.")
      if (amount.minor > payment.minor - payment.refunded - payment.chargedBack) {
        throw unprocessable("The amount is higher than the amount remaining.", "amount")
      }
      // "A duplicate refund has been detected" ([spec] 409): the same amount on the payment within the last hour
      // ([old] payments/refunds.rst). Mollie ran the request, so its answer is kept under the Idempotency-Key.
      const hourAgo = clock.now() - 3_600_000
      if (refunds.some((r) => r.payment === payment && r.minor === amount.minor && r.createdMs > hourAgo)) {
        throw new MollieFailure(409, "Conflict", "A duplicate refund has been detected", null, true)
      }
      return make(payment, amount.minor, body, initial)
    },
    get: (profile, paymentId, refundId) => {
      payments.get(profile, paymentId)
      const refund = refunds.find((candidate) => candidate.id === refundId && candidate.payment.id === paymentId)
      if (refund === undefined) throw notFound("refund")
      return refund
    },
    ofPayment: (profile, paymentId) => {
      payments.get(profile, paymentId)
      return refunds.filter((refund) => refund.payment.id === paymentId).reverse()
    },
    ofProfile: (profile) => refunds.filter((refund) => refund.payment.profile === profile).reverse(),
    find: (refundId) => refunds.find((refund) => refund.id === refundId),
    nextStatus: (status) => {
      initial = status
    },
    setStatus,
    inDashboard: (paymentId, minor, status = "refunded") => {
      const payment = payments.find(paymentId)
      if (payment === undefined) throw new Error(`no payment ${paymentId}`)
      const refund = make(payment, minor ?? payment.minor - payment.refunded, {}, "pending")
      return status === "pending" ? refund : setStatus(refund.id, status)
    }
  }
}

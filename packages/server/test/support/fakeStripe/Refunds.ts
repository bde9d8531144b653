/**
 * Refunds of a paid PaymentIntent's charge: made through the API or in Stripe's dashboard, settled or failed later,
 * with the charge's refunded amount kept in step and their events sent.
 */
import { find, type Stored } from "./Accounts.ts"
import type { Clock } from "./Clock.ts"
import { type EventRequest, type Events, noRequest } from "./Events.ts"
import { invalidRequest, missing } from "./Failures.ts"
import { fixture, randomId } from "./Fixtures.ts"
import { clone, isObject, type Json, type JsonObject } from "./Json.ts"
import type { PaymentIntents } from "./PaymentIntents.ts"

export type RefundStatus = "succeeded" | "pending" | "failed" | "canceled"

export interface Refunds {
  /** Every refund with its account, oldest first. */
  readonly stored: () => ReadonlyArray<Stored>
  /** The account's refund, or Stripe's "No such refund". */
  readonly find: (account: string, id: string) => Stored
  readonly get: (id: string) => Stored | undefined
  readonly create: (account: string, params: JsonObject, request: EventRequest) => JsonObject
  /** The status the next refunds get when created. */
  readonly nextStatus: (status: RefundStatus) => void
  /** Moves a refund from one of `from` to `status`, as Stripe does later. */
  readonly change: (refundId: string, status: string, from: ReadonlyArray<string>) => JsonObject
  /** A refund made in Stripe's own dashboard: no Kassa metadata. */
  readonly inDashboard: (paymentIntentId: string, amount?: number) => JsonObject
}

export const makeRefunds = (options: {
  readonly clock: Clock
  readonly events: Events
  readonly paymentIntents: PaymentIntents
}): Refunds => {
  const { clock, events, paymentIntents } = options
  const refunds = new Map<string, Stored>()
  let refundStatus: RefundStatus = "succeeded"

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
    const charge = paymentIntents.charge(chargeId)
    if (charge === undefined) return
    const { succeeded } = refundTotals(chargeId)
    charge.object.amount_refunded = succeeded
    charge.object.refunded = succeeded >= Number(charge.object.amount)
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
    request: EventRequest
  ) => {
    events.emit(account, type, refund, request)
    if (refund.status === "succeeded") {
      const charge = paymentIntents.charge(String(refund.charge))
      if (charge !== undefined) events.emit(account, "charge.refunded", charge.object, request)
    }
    if (refund.status === "failed") events.emit(account, "refund.failed", refund, request)
  }

  const create = (account: string, params: JsonObject, request: EventRequest) => {
    const intentId = params.payment_intent
    if (typeof intentId !== "string") throw missing("payment_intent")
    const intent = paymentIntents.find(account, intentId, "payment_intent")
    const charge = paymentIntents.charge(intent.charge)
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
      created: clock.now,
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

  return {
    stored: () => [...refunds.values()],
    find: (account, id) => find(refunds, id, account, "refund", "refund"),
    get: (id) => refunds.get(id),
    create,
    nextStatus: (status) => {
      refundStatus = status
    },
    change: (refundId, status, from) => {
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
      refundEvents(stored.account, stored.object, "refund.updated", noRequest)
      return clone(stored.object)
    },
    inDashboard: (paymentIntentId, amount) => {
      const intent = paymentIntents.get(paymentIntentId)
      if (intent === undefined) throw new Error(`no payment intent ${paymentIntentId}`)
      const params: JsonObject = {
        payment_intent: paymentIntentId,
        ...(amount === undefined ? {} : { amount: String(amount) })
      }
      return create(intent.account, params, noRequest)
    }
  }
}

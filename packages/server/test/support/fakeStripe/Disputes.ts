/**
 * Disputes (chargebacks) on a paid PaymentIntent's charge, opened and closed by the card network as a test asks, with
 * the money they move and their events (https://docs.stripe.com/disputes/how-disputes-work).
 */
import type { Stored } from "./Accounts.ts"
import type { Clock } from "./Clock.ts"
import { type Events, noRequest } from "./Events.ts"
import { randomId } from "./Fixtures.ts"
import { clone, type JsonObject } from "./Json.ts"
import type { PaymentIntents } from "./PaymentIntents.ts"

export interface Disputes {
  /** Every dispute with its account, oldest first. */
  readonly stored: () => ReadonlyArray<Stored>
  /**
   * The payer's bank disputes the charge: `amount` (default the whole charge). An `inquiry` is a question before a
   * chargeback: no money moves.
   */
  readonly open: (
    paymentIntentId: string,
    options?: { readonly amount?: number; readonly inquiry?: boolean }
  ) => JsonObject
  /** The network's decision: `won` gives the money back, `lost` keeps it withdrawn. */
  readonly close: (disputeId: string, outcome: "won" | "lost") => JsonObject
}

export const makeDisputes = (options: {
  readonly clock: Clock
  readonly events: Events
  readonly paymentIntents: PaymentIntents
}): Disputes => {
  const { clock, events, paymentIntents } = options
  const disputes = new Map<string, Stored>()

  /**
   * A balance transaction of a dispute: its `balance_transactions` "show funds withdrawn and reinstated to your Stripe
   * account as a result of this dispute" (https://docs.stripe.com/api/disputes/object#dispute_object-balance_transactions);
   * the withdrawal carries the dispute fee (https://docs.stripe.com/disputes/how-disputes-work#dispute-fees).
   */
  const movement = (dispute: JsonObject, amount: number, fee: number, category: string): JsonObject => ({
    id: randomId("txn"),
    object: "balance_transaction",
    amount,
    available_on: clock.now,
    created: clock.now,
    currency: dispute.currency ?? null,
    description: category === "dispute" ? "Chargeback withdrawal" : "Chargeback reversal",
    fee,
    net: amount - fee,
    reporting_category: category,
    source: dispute.id ?? null,
    status: "available",
    type: "adjustment"
  })

  return {
    stored: () => [...disputes.values()],
    open: (paymentIntentId, opts = {}) => {
      const intent = paymentIntents.get(paymentIntentId)
      const charge = intent === undefined ? undefined : paymentIntents.charge(intent.charge)
      if (intent === undefined || charge === undefined) throw new Error(`no payment intent ${paymentIntentId}`)
      const inquiry = opts.inquiry === true
      const dispute: JsonObject = {
        id: randomId("du"),
        object: "dispute",
        amount: opts.amount ?? Number(charge.object.amount),
        balance_transactions: [],
        charge: intent.charge,
        created: clock.now,
        currency: charge.object.currency ?? null,
        is_charge_refundable: false,
        livemode: charge.object.livemode ?? false,
        metadata: {},
        payment_intent: paymentIntentId,
        reason: "fraudulent",
        // https://docs.stripe.com/disputes/how-disputes-work#inquiries: an inquiry starts as `warning_needs_response`.
        status: inquiry ? "warning_needs_response" : "needs_response"
      }
      disputes.set(String(dispute.id), { account: intent.account, object: dispute })
      // https://docs.stripe.com/api/charges/object#charge_object-disputed
      charge.object.disputed = true
      events.emit(intent.account, "charge.dispute.created", dispute, noRequest)
      if (!inquiry) {
        // A chargeback "immediately reverses the payment … Stripe debits your balance for the payment amount and
        // dispute fee" (https://docs.stripe.com/disputes/how-disputes-work); inquiries move no money.
        dispute.balance_transactions = [movement(dispute, -Number(dispute.amount), 1_500, "dispute")]
        events.emit(intent.account, "charge.dispute.funds_withdrawn", dispute, noRequest)
      }
      return clone(dispute)
    },
    close: (disputeId, outcome) => {
      const stored = disputes.get(disputeId)
      if (stored === undefined) throw new Error(`no dispute ${disputeId}`)
      const dispute = stored.object
      const inquiry = String(dispute.status).startsWith("warning_")
      dispute.status = inquiry ? "warning_closed" : outcome
      if (!inquiry && outcome === "won") {
        // Won: "the disputed amount … is returned to you" (https://docs.stripe.com/disputes/how-disputes-work), with
        // `charge.dispute.funds_reinstated` (https://docs.stripe.com/api/events/types#event_types-charge.dispute.funds_reinstated).
        const withdrawn = Array.isArray(dispute.balance_transactions) ? dispute.balance_transactions : []
        dispute.balance_transactions = [...withdrawn, movement(dispute, Number(dispute.amount), 0, "dispute_reversal")]
        events.emit(stored.account, "charge.dispute.funds_reinstated", dispute, noRequest)
      }
      events.emit(stored.account, "charge.dispute.closed", dispute, noRequest)
      return clone(dispute)
    }
  }
}

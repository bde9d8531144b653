/**
 * The PaymentIntents and Charges a completed checkout makes: created when the customer pays, settled later for a
 * delayed payment method.
 */
import { find, type Stored } from "./Accounts.ts"
import type { Clock } from "./Clock.ts"
import { fixture, randomId } from "./Fixtures.ts"
import type { JsonObject } from "./Json.ts"

export interface StoredIntent extends Stored {
  readonly charge: string
}

export interface PaymentIntents {
  readonly get: (id: string) => StoredIntent | undefined
  readonly charge: (id: string) => Stored | undefined
  /** The account's intent, or Stripe's "No such payment_intent" naming `param`. */
  readonly find: (account: string, id: string, param: string) => StoredIntent
  /** Creates the intent and its charge for a completed session: paid, or processing (a delayed method). */
  readonly open: (account: string, session: JsonObject, metadata: JsonObject, paid: boolean) => string
  /** A delayed payment's outcome on the intent and its charge. */
  readonly settle: (intentId: string, outcome: "succeeded" | "failed") => void
}

export const makePaymentIntents = (clock: Clock): PaymentIntents => {
  const paymentIntents = new Map<string, StoredIntent>()
  const charges = new Map<string, Stored>()
  return {
    get: (id) => paymentIntents.get(id),
    charge: (id) => charges.get(id),
    find: (account, id, param) => find(paymentIntents, id, account, "payment_intent", param),
    open: (account, session, metadata, paid) => {
      const intentId = randomId("pi")
      const chargeId = randomId("ch")
      const amount = Number(session.amount_total)
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
          created: clock.now,
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
          created: clock.now,
          currency: session.currency ?? null,
          last_payment_error: null,
          latest_charge: chargeId,
          livemode: session.livemode ?? null,
          metadata,
          status: paid ? "succeeded" : "processing"
        }
      })
      return intentId
    },
    settle: (intentId, outcome) => {
      const intent = paymentIntents.get(intentId)
      const charge = intent === undefined ? undefined : charges.get(intent.charge)
      if (outcome === "succeeded") {
        if (intent !== undefined)
          Object.assign(intent.object, { status: "succeeded", amount_received: intent.object.amount })
        if (charge !== undefined) Object.assign(charge.object, { status: "succeeded", paid: true, captured: true })
      } else {
        if (intent !== undefined) Object.assign(intent.object, { status: "requires_payment_method" })
        if (charge !== undefined) Object.assign(charge.object, { status: "failed" })
      }
    }
  }
}

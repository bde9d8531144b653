import { KassaClient } from "@kassa/client"
import { Config, Effect, Layer, Stream } from "effect"

// The key is read as a Redacted value, so it never shows up in logs.
export const KassaLive = Layer.unwrap(
  Effect.gen(function* () {
    const apiKey = yield* Config.Redacted("KASSA_API_KEY")
    const baseUrl = yield* Config.URL("KASSA_BASE_URL")
    return KassaClient.layer({ apiKey, baseUrl })
  })
)

export const payOrder = Effect.fn("payOrder")(function* (orderId: string, amountInCents: number) {
  const kassa = yield* KassaClient
  return yield* kassa.payments.create({ amount: amountInCents, currency: "EUR", order_reference: orderId }).pipe(
    // Pressed "Pay" twice? Use the payment the order already has.
    Effect.catchTag("OrderReferenceAlreadyPaidError", (error) => kassa.payments.get(error.payment_id))
  )
})

/** Refunds every paid payment of an order in full. */
export const refundOrder = Effect.fn("refundOrder")(function* (orderId: string) {
  const kassa = yield* KassaClient
  return yield* kassa.payments.list({ order_reference: orderId, status: "paid" }).pipe(
    Stream.mapEffect((payment) => kassa.payments.refund(payment.id, { reason: "order cancelled" })),
    Stream.runCollect
  )
})

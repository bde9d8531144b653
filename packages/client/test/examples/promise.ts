import { Kassa, OrderReferenceAlreadyPaidError } from "@kassa/client"

// Server-side only: the API key must never reach a browser.
export const kassa = new Kassa({
  apiKey: process.env.KASSA_API_KEY ?? "",
  baseUrl: process.env.KASSA_BASE_URL ?? "http://localhost:3000"
})

/** Starts paying an order; answers with the page to send the customer to. */
export async function checkoutUrl(orderId: string, amountInCents: number): Promise<string> {
  try {
    const payment = await kassa.payments.create({
      amount: amountInCents,
      currency: "EUR",
      order_reference: orderId,
      description: `Order ${orderId}`,
      return_url: "https://shop.example/orders/thanks"
    })
    return payment.checkout_url
  } catch (error) {
    // The order already has a payment (the customer pressed "Pay" twice): send them to that one.
    if (error instanceof OrderReferenceAlreadyPaidError) {
      return (await kassa.payments.get(error.payment_id)).checkout_url
    }
    throw error
  }
}

/** The total of all paid payments, page after page. */
export async function paidTotal(): Promise<number> {
  let total = 0
  for await (const payment of kassa.payments.list({ status: "paid" })) {
    total += payment.amount
  }
  return total
}

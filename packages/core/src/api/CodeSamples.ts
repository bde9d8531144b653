/**
 * SDK (`@kassa/client`) and curl snippets for the merchant API's main operations, as `x-codeSamples` in its OpenAPI
 * document, which `/docs` shows beside each operation.
 */
const curl = (method: string, path: string, body?: string, idempotent = false) =>
  [
    `curl -X ${method} "$KASSA_URL${path}"`,
    '  -H "Authorization: Bearer $KASSA_API_KEY"',
    ...(idempotent ? ['  -H "Idempotency-Key: order-1042-attempt-1"'] : []),
    ...(body === undefined ? [] : ['  -H "Content-Type: application/json"', `  -d '${body}'`])
  ].join(" \\\n")

/** The SDK's package, named through a value: this module only writes snippets, it imports nothing (test/Purity). */
const sdkPackage = JSON.stringify("@kassa/client")

const sdk = (call: string) =>
  `import { Kassa } from ${sdkPackage}

const kassa = new Kassa({ apiKey: "pk_test_…", baseUrl: "http://localhost:4000" })
${call}`

const samples = (typescript: string, shell: string) => [
  { lang: "TypeScript", label: "SDK", source: sdk(typescript) },
  { lang: "Shell", label: "curl", source: shell }
]

const id = "0b6c1c59-5b8e-4d1e-9a51-2f4c5d7e8a90"

export const merchantCodeSamples = {
  "post /api/v1/payments": samples(
    `const payment = await kassa.payments.create(
  { amount: 1250, currency: "EUR", order_reference: "order-1042", return_url: "https://shop.example.org/orders/1042" },
  { idempotencyKey: "order-1042-attempt-1" }
)
// send the customer to payment.checkout_url`,
    curl(
      "POST",
      "/api/v1/payments",
      '{"amount":1250,"currency":"EUR","order_reference":"order-1042","return_url":"https://shop.example.org/orders/1042"}',
      true
    )
  ),
  "get /api/v1/payments/{id}": samples(
    `const payment = await kassa.payments.get("${id}")`,
    curl("GET", `/api/v1/payments/${id}`)
  ),
  "get /api/v1/payments": samples(
    `// Follows the pages for you.
for await (const payment of kassa.payments.list({ status: "paid" })) console.log(payment.id)`,
    curl("GET", "/api/v1/payments?status=paid&limit=10")
  ),
  "post /api/v1/payments/{id}/cancel": samples(
    `const payment = await kassa.payments.cancel("${id}")`,
    curl("POST", `/api/v1/payments/${id}/cancel`)
  ),
  "post /api/v1/payments/{id}/refunds": samples(
    `const payment = await kassa.payments.refund("${id}", { amount: 500, reason: "damaged" })`,
    curl("POST", `/api/v1/payments/${id}/refunds`, '{"amount":500,"reason":"damaged"}', true)
  ),
  "get /api/v1/events": samples(
    `for await (const event of kassa.events.list({ type: "payment.paid" })) console.log(event.id, event.data.status)`,
    curl("GET", "/api/v1/events?type=payment.paid&limit=10")
  )
} as const

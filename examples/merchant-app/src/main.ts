/**
 * Starts the example shop: `KASSA_API_KEY`, `KASSA_WEBHOOK_SECRET`, `KASSA_BASE_URL` (default http://localhost:4000,
 * where `npm start` runs Kassa), `PORT` (default 3001) and `SHOP_BASE_URL` (default http://localhost:<PORT>).
 */
import { Kassa } from "@kassa/client"
import { createShop } from "./shop.ts"

const required = (name: string): string => {
  const value = process.env[name]
  if (value === undefined || value === "") {
    console.error(`${name} is not set: see examples/merchant-app/README.md`)
    process.exit(1)
  }
  return value
}

const port = Number(process.env.PORT ?? "3001")
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`PORT must be a port number, got ${process.env.PORT}`)
  process.exit(1)
}
const baseUrl = process.env.SHOP_BASE_URL ?? `http://localhost:${port}`

const shop = createShop({
  kassa: new Kassa({
    apiKey: required("KASSA_API_KEY"),
    baseUrl: process.env.KASSA_BASE_URL ?? "http://localhost:4000"
  }),
  webhookSecret: required("KASSA_WEBHOOK_SECRET"),
  baseUrl
})

shop.server.listen(port, () => {
  console.log(`Example shop at ${baseUrl}, receiving webhooks at ${baseUrl}/webhooks/kassa`)
})

const stop = () => shop.server.close(() => process.exit(0))
process.once("SIGINT", stop)
process.once("SIGTERM", stop)

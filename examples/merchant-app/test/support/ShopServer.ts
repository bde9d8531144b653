/**
 * The example shop served over real HTTP for the end-to-end tests, with Kassa's webhook requests recorded on the way
 * in: each is kept byte for byte (to verify or replay later) and the same bytes are handed to the shop's own
 * handler, which verifies them as it would in production.
 */
import { once } from "node:events"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Readable } from "node:stream"
import type { Shop } from "../../src/shop.ts"

/** A webhook request exactly as Kassa sent it. */
export interface Delivery {
  readonly body: Buffer
  readonly signature: string
  readonly event: string
}

export interface ShopServer {
  readonly url: string
  /** Kassa's webhook requests, in arrival order. */
  readonly deliveries: Array<Delivery>
  readonly close: () => Promise<void>
}

/**
 * Listens on a free port of 127.0.0.1. The shop is read at each request: it is made after Kassa knows the shop's
 * webhook URL, since it needs the application's key and secret.
 */
export const startShopServer = async (shop: () => Shop): Promise<ShopServer> => {
  const deliveries: Array<Delivery> = []
  const dispatch = async (request: IncomingMessage, response: ServerResponse) => {
    if (request.url === "/webhooks/kassa" && request.headers["user-agent"] === "Kassa-Webhooks/1.0") {
      const chunks: Array<Buffer> = []
      for await (const chunk of request) chunks.push(chunk as Buffer)
      const body = Buffer.concat(chunks)
      deliveries.push({
        body,
        signature: String(request.headers["x-service-signature"]),
        event: String(request.headers["x-service-event"])
      })
      const replayed = Object.assign(Readable.from([body]), {
        method: request.method,
        url: request.url,
        headers: request.headers
      })
      return shop().handle(replayed, response)
    }
    return shop().handle(request, response)
  }
  const server = createServer((request, response) => void dispatch(request, response))
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    deliveries,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

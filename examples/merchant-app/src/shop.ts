/**
 * A small shop on Kassa: pick a product, pay on Kassa's hosted checkout, come back to the order page. Plain
 * `node:http`, orders in memory.
 *
 * The rules that matter for any integration:
 * - the price comes from the shop's own catalog, never from the browser;
 * - the order's status changes only on a verified webhook (`verify` on the raw body), never on the customer's return
 *   (anyone can open a return URL);
 * - Kassa delivers at least once, so handled event ids are remembered and a duplicate is acknowledged, not re-applied;
 * - events can arrive out of order, so the newest event's `data.status` wins, not the event name.
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http"
import type { Kassa } from "@kassa/client"
import {
  type HandledEventStore,
  InMemoryHandledEventStore,
  type KassaEvent,
  type KassaPaymentStatus,
  signatureHeaderName,
  verify,
  WebhookVerificationError
} from "@kassa/webhook-verify"

/** What the shop sells; prices in cents. */
export interface Product {
  readonly id: string
  readonly name: string
  readonly amount: number
}

export const defaultCatalog: ReadonlyArray<Product> = [
  { id: "mug", name: "Kassa mug", amount: 1250 },
  { id: "tshirt", name: "Kassa T-shirt", amount: 2500 }
]

/** `awaiting_payment` until the first verified webhook; then the payment's status as Kassa last reported it. */
export type OrderStatus = "awaiting_payment" | KassaPaymentStatus

/** One handled webhook event, as the order page lists it. */
export interface OrderEvent {
  readonly id: string
  readonly event: string
  readonly status: KassaPaymentStatus
  readonly createdAt: string
}

export interface Order {
  readonly id: string
  readonly product: Product
  readonly createdAt: string
  paymentId: string | null
  status: OrderStatus
  /** `created_at` of the event whose status the order shows; older events arriving later do not override it. */
  statusAt: string | null
  readonly events: Array<OrderEvent>
}

export interface ShopOptions {
  readonly kassa: Kassa
  /** The application's `whsec_…` secret. */
  readonly webhookSecret: string
  /** Where customers reach the shop, e.g. `http://localhost:3001`: return URLs point here. */
  readonly baseUrl: string
  readonly handledEvents?: HandledEventStore
  readonly catalog?: ReadonlyArray<Product>
  /** Where unexpected errors go. Default `console.error`. */
  readonly logError?: (message: string, error: unknown) => void
}

/** What the handler needs of a request; a Node.js `IncomingMessage` is one. */
export interface ShopRequest extends AsyncIterable<Uint8Array | string> {
  readonly method?: string | undefined
  readonly url?: string | undefined
  readonly headers: IncomingHttpHeaders
}

export interface Shop {
  /** The request handler: `createServer(shop.handle)`. */
  readonly handle: (request: ShopRequest, response: ServerResponse) => Promise<void>
  /** A server running `handle`, not yet listening. */
  readonly server: Server
  /** The order with that id, if any. */
  readonly order: (id: string) => Order | undefined
}

const maxWebhookBytes = 1024 * 1024
const maxFormBytes = 16 * 1024

class BodyTooLarge extends Error {}

const readBody = async (request: ShopRequest, limit: number): Promise<Buffer> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of request) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk)
    size += buffer.length
    if (size > limit) throw new BodyTooLarge()
    chunks.push(buffer)
  }
  return Buffer.concat(chunks)
}

// --- HTML: everything shown goes through escapeHtml -------------------------------------------------------------------

const htmlEscapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }

export const escapeHtml = (value: string | number): string =>
  String(value).replace(/[&<>"']/g, (character) => htmlEscapes[character] ?? character)

const formatAmount = (cents: number): string => `€${(cents / 100).toFixed(2)}`

const statusLabels: Record<OrderStatus, string> = {
  awaiting_payment: "Awaiting payment",
  pending: "Payment pending",
  paid: "Paid",
  failed: "Payment failed",
  cancelled: "Cancelled",
  expired: "Payment expired",
  partially_refunded: "Partially refunded",
  refunded: "Refunded"
}

const page = (title: string, body: string, options: { readonly refresh?: boolean } = {}): string =>
  [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    options.refresh === true ? '<meta http-equiv="refresh" content="3">' : "",
    `<title>${escapeHtml(title)} · Example shop</title>`,
    "<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}",
    "table{border-collapse:collapse}td,th{padding:.25rem .75rem;border-bottom:1px solid #ddd;text-align:left}</style>",
    `</head><body><p><a href="/">Example shop</a></p><h1>${escapeHtml(title)}</h1>`,
    body,
    "</body></html>"
  ].join("\n")

const catalogPage = (catalog: ReadonlyArray<Product>): string =>
  page(
    "Products",
    catalog
      .map(
        (product) =>
          `<form method="post" action="/orders"><p>${escapeHtml(product.name)} — ${escapeHtml(formatAmount(product.amount))} ` +
          `<input type="hidden" name="product" value="${escapeHtml(product.id)}">` +
          `<button type="submit">Buy</button></p></form>`
      )
      .join("\n")
  )

const finalStatuses: ReadonlyArray<OrderStatus> = ["paid", "failed", "cancelled", "expired", "refunded"]

const orderPage = (order: Order): string =>
  page(
    `Order ${order.id}`,
    [
      `<p>${escapeHtml(order.product.name)}, ${escapeHtml(formatAmount(order.product.amount))}</p>`,
      `<p>Status: <strong class="status" data-status="${escapeHtml(order.status)}">${escapeHtml(statusLabels[order.status])}</strong></p>`,
      order.status === "awaiting_payment"
        ? "<p>The status changes when Kassa confirms the payment; this page refreshes itself.</p>"
        : "",
      order.paymentId === null ? "" : `<p>Payment <code>${escapeHtml(order.paymentId)}</code></p>`,
      "<h2>Webhook events</h2>",
      order.events.length === 0
        ? "<p>None yet.</p>"
        : [
            "<table><thead><tr><th>Event</th><th>Id</th><th>Status</th><th>At</th></tr></thead><tbody>",
            ...order.events.map(
              (event) =>
                `<tr class="event"><td>${escapeHtml(event.event)}</td><td><code>${escapeHtml(event.id)}</code></td>` +
                `<td>${escapeHtml(event.status)}</td><td>${escapeHtml(event.createdAt)}</td></tr>`
            ),
            "</tbody></table>"
          ].join("\n")
    ].join("\n"),
    { refresh: !finalStatuses.includes(order.status) }
  )

// --- the shop ---------------------------------------------------------------------------------------------------------

const securityHeaders = {
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin"
}

const send = (
  response: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = { "content-type": "text/html; charset=utf-8" }
) => {
  response.writeHead(status, { ...securityHeaders, ...headers })
  response.end(body)
}

const sendText = (response: ServerResponse, status: number, text: string) =>
  send(response, status, text, { "content-type": "text/plain; charset=utf-8" })

const headerValue = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

export const createShop = (options: ShopOptions): Shop => {
  const { kassa, webhookSecret } = options
  if (webhookSecret === "") throw new TypeError("webhookSecret is empty: pass the application's whsec_… secret")
  const baseUrl = new URL(options.baseUrl)
  const catalog = options.catalog ?? defaultCatalog
  const handledEvents = options.handledEvents ?? new InMemoryHandledEventStore()
  const logError = options.logError ?? ((message, error) => console.error(message, error))
  const orders = new Map<string, Order>()
  // Events being handled right now: a duplicate arriving meanwhile must not slip past `handledEvents.has`.
  const inFlight = new Set<string>()

  const placeOrder = async (request: ShopRequest, response: ServerResponse) => {
    // A cross-site form post would create orders in the customer's name; browsers send Origin on POST.
    const origin = headerValue(request.headers, "origin")
    if (origin !== undefined && origin !== baseUrl.origin) return sendText(response, 403, "Cross-site request refused")
    const form = new URLSearchParams((await readBody(request, maxFormBytes)).toString("utf8"))
    const product = catalog.find((candidate) => candidate.id === form.get("product"))
    if (product === undefined) return send(response, 422, page("Unknown product", '<p><a href="/">Back</a></p>'))

    const order: Order = {
      id: `ord_${randomUUID()}`,
      product,
      createdAt: new Date().toISOString(),
      paymentId: null,
      status: "awaiting_payment",
      statusAt: null,
      events: []
    }
    // Stored before the payment exists, so a webhook can never find the order missing.
    orders.set(order.id, order)
    try {
      const payment = await kassa.payments.create(
        {
          amount: product.amount,
          currency: "EUR",
          order_reference: order.id,
          description: product.name,
          return_url: new URL(`/orders/${order.id}`, baseUrl).toString()
        },
        // Pressing "Buy" creates a new order each time; the key makes the SDK's retries of this one safe.
        { idempotencyKey: `create-${order.id}` }
      )
      order.paymentId = payment.id
      response.writeHead(303, { ...securityHeaders, location: payment.checkout_url })
      response.end()
    } catch (error) {
      orders.delete(order.id)
      logError("Creating the payment failed", error)
      send(response, 502, page("Payment unavailable", "<p>The payment could not be started. Please try again.</p>"))
    }
  }

  const applyEvent = (event: KassaEvent) => {
    const order = orders.get(event.data.order_reference)
    // Not one of ours (another shop on the same application, or an order lost in a restart): acknowledge it, or
    // Kassa would retry it for a day.
    if (order === undefined) return
    order.events.push({ id: event.id, event: event.event, status: event.data.status, createdAt: event.created_at })
    // Out of order: an older event (say payment.paid after payment.refunded) must not move the order back.
    if (order.statusAt !== null && Date.parse(event.created_at) < Date.parse(order.statusAt)) return
    order.status = event.data.status
    order.statusAt = event.created_at
    order.paymentId ??= event.data.id
  }

  const receiveWebhook = async (request: ShopRequest, response: ServerResponse) => {
    const body = await readBody(request, maxWebhookBytes)
    let event: KassaEvent
    try {
      // The raw bytes: the signature covers exactly what Kassa sent.
      event = await verify(body, headerValue(request.headers, signatureHeaderName.toLowerCase()), webhookSecret)
    } catch (error) {
      // Kassa shows the start of the answer in its delivery list: the reason helps whoever debugs it.
      if (error instanceof WebhookVerificationError) return sendText(response, 400, error.message)
      throw error
    }
    // Being handled right now: not acknowledged yet, since that attempt may still fail; Kassa retries this one later.
    if (inFlight.has(event.id)) return sendText(response, 409, "duplicate, being handled: retry later")
    inFlight.add(event.id)
    try {
      if (await handledEvents.has(event.id)) return sendText(response, 200, "duplicate, already handled")
      applyEvent(event)
      await handledEvents.add(event.id)
    } finally {
      inFlight.delete(event.id)
    }
    sendText(response, 200, "ok")
  }

  const route = async (request: ShopRequest, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", baseUrl)
    const method = request.method ?? "GET"
    if (url.pathname === "/" && (method === "GET" || method === "HEAD"))
      return send(response, 200, catalogPage(catalog))
    if (url.pathname === "/orders" && method === "POST") return placeOrder(request, response)
    if (url.pathname === "/webhooks/kassa" && method === "POST") return receiveWebhook(request, response)
    const orderId = /^\/orders\/([^/]+)$/.exec(url.pathname)?.[1]
    if (orderId !== undefined && (method === "GET" || method === "HEAD")) {
      const order = orders.get(orderId)
      return order === undefined
        ? send(response, 404, page("Order not found", '<p><a href="/">Back to the shop</a></p>'))
        : send(response, 200, orderPage(order))
    }
    return send(response, 404, page("Not found", '<p><a href="/">Back to the shop</a></p>'))
  }

  const handle = async (request: ShopRequest, response: ServerResponse) => {
    try {
      await route(request, response)
    } catch (error) {
      if (error instanceof BodyTooLarge) return sendText(response, 413, "Request body too large")
      logError("Request failed", error)
      if (!response.headersSent) sendText(response, 500, "Internal error")
      else response.destroy()
    }
  }

  return {
    handle,
    server: createServer((request, response) => void handle(request, response)),
    order: (id) => orders.get(id)
  }
}

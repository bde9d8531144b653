/**
 * The test-mode checkout at a payment's `_links.checkout.href`: as in Mollie's test mode the tester picks the outcome
 * (paid, failed, canceled, expired, or leaves it open; research mollie.md §10, https://docs.mollie.com/it/reference/testing)
 * and is sent on to `redirectUrl` (`cancelUrl` for a cancel, mollie.md §1).
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { PaymentStatus, Payments } from "./Payments.ts"

const html = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

const page = (response: ServerResponse, status: number, title: string, body: string) => {
  response.writeHead(status, { "content-type": "text/html; charset=utf-8" })
  response.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${html(title)}</title></head><body><main><h1>${html(title)}</h1>${body}</main></body></html>`
  )
}

export const outcomes: ReadonlyArray<PaymentStatus> = ["paid", "failed", "canceled", "expired", "open"]

export const makeTestCheckout =
  (payments: Payments) => (request: IncomingMessage, response: ServerResponse, body: string, paymentId: string) => {
    const payment = payments.find(paymentId)
    if (payment === undefined) return page(response, 404, "Payment not found", "<p>This payment does not exist.</p>")
    const status = String(payment.object.status)
    if (status !== "open") {
      return page(
        response,
        200,
        `Payment ${status}`,
        `<p><a href="${html(String(payment.object.redirectUrl))}">Back to the shop</a></p>`
      )
    }
    const amount = payment.object.amount as { readonly value: string; readonly currency: string }
    if (request.method !== "POST") {
      const choices = outcomes
        .map(
          (outcome, index) =>
            `<label><input type="radio" name="final_state" value="${outcome}"${index === 0 ? " checked" : ""}> ${outcome[0]?.toUpperCase()}${outcome.slice(1)}</label>`
        )
        .join("\n")
      return page(
        response,
        200,
        "Test mode",
        `<p>${html(String(payment.object.description))}: <strong id="amount">${html(`${amount.currency} ${amount.value}`)}</strong></p>
<form method="post" action="/checkout/test-mode/${html(paymentId)}">
<fieldset><legend>Select the payment status</legend>${choices}</fieldset>
<button type="submit">Continue</button>
</form>`
      )
    }
    const chosen = new URLSearchParams(body).get("final_state") as PaymentStatus | null
    if (chosen === null || !outcomes.includes(chosen)) return page(response, 400, "Test mode", "<p>Pick a status.</p>")
    if (chosen !== "open") payments.setStatus(paymentId, chosen)
    const cancelUrl = payment.object.cancelUrl
    const to = chosen === "canceled" && typeof cancelUrl === "string" ? cancelUrl : String(payment.object.redirectUrl)
    response.writeHead(303, { location: to })
    response.end()
  }

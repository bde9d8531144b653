/**
 * The hosted checkout page at `/pay/<session id>` (the session's `url`): the customer pays, is declined or abandons,
 * as in a browser.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { JsonObject } from "./Json.ts"
import { isDelayed, type Sessions } from "./Sessions.ts"

const html = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

const page = (response: ServerResponse, status: number, title: string, body: string) => {
  response.writeHead(status, { "content-type": "text/html; charset=utf-8" })
  response.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${html(title)}</title></head><body><main><h1>${html(title)}</h1>${body}</main></body></html>`
  )
}

const checkoutForm = (session: JsonObject, notice: string | null) => {
  const email = typeof session.customer_email === "string" ? session.customer_email : ""
  const amount = `${(Number(session.amount_total) / 100).toFixed(2)} ${String(session.currency).toUpperCase()}`
  return `${notice === null ? "" : `<p role="alert">${html(notice)}</p>`}
<p>Amount: <strong id="amount">${html(amount)}</strong></p>
<form method="post" action="/pay/${html(String(session.id))}">
  <label>Name <input name="name" autocomplete="name"></label>
  <label>Email <input name="email" type="email" value="${html(email)}"></label>
  <label>Phone <input name="phone" type="tel"></label>
  <button name="action" value="pay">Pay</button>
  <button name="action" value="decline">Decline</button>
  <button name="action" value="abandon" formnovalidate>Abandon</button>
</form>`
}

/** `{CHECKOUT_SESSION_ID}` in success_url is replaced by the session id (https://docs.stripe.com/payments/checkout/custom-success-page). */
const successUrl = (session: JsonObject) =>
  String(session.success_url).replaceAll("{CHECKOUT_SESSION_ID}", String(session.id))

export const makeHostedCheckout =
  (sessions: Sessions) => (request: IncomingMessage, response: ServerResponse, body: string, sessionId: string) => {
    const stored = sessions.get(sessionId)
    if (stored === undefined)
      return page(response, 404, "Something went wrong", "<p>This checkout page does not exist.</p>")
    const session = stored.object
    if (session.status === "expired") {
      return page(response, 410, "This checkout session has expired", "<p>Return to the merchant to try again.</p>")
    }
    if (session.status === "complete") {
      return page(
        response,
        200,
        "Payment complete",
        `<p><a href="${html(successUrl(session))}">Back to the merchant</a></p>`
      )
    }
    if (request.method !== "POST") return page(response, 200, "Checkout", checkoutForm(session, null))
    const form = new URLSearchParams(body)
    const text = (name: string) => {
      const value = form.get(name)?.trim() ?? ""
      return value === "" ? null : value
    }
    switch (form.get("action")) {
      case "pay": {
        sessions.complete(
          sessionId,
          { name: text("name"), email: text("email"), phone: text("phone") },
          isDelayed(session)
        )
        response.writeHead(303, { location: successUrl(session) })
        return response.end()
      }
      case "decline":
        // A declined card leaves the checkout open for another try (https://docs.stripe.com/testing#declined-payments).
        return page(response, 402, "Checkout", checkoutForm(session, "Your card was declined."))
      case "abandon": {
        // The customer goes back: to cancel_url, the session stays open until it expires (https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-cancel_url).
        const cancel = session.cancel_url
        if (typeof cancel !== "string")
          return page(response, 200, "Checkout abandoned", "<p>You left the checkout.</p>")
        response.writeHead(303, { location: cancel })
        return response.end()
      }
      default:
        return page(response, 400, "Checkout", checkoutForm(session, "Choose Pay, Decline or Abandon."))
    }
  }

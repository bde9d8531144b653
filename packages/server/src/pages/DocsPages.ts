/**
 * The documentation pages' templates: `/docs/refunds`, the page that `refunds_processed_manually` errors point to as
 * `docs_url`, and the Content-Security-Policy of `/docs` (the API reference, Scalar bundled in effect so it works
 * offline). Their routes, caching and compression are http/DocsRoutes.
 */
import { createHash } from "node:crypto"
import { html } from "./Html.ts"
import { page, respond } from "./Layout.ts"

const refundsPage = page({
  title: "Refunds — Kassa",
  tag: "Docs",
  body: html`<div class="card">
<h1>Refunds</h1>
<p>How a payment is refunded depends on the mode of the key that created it.</p>
<h2>Test mode (<code>pk_test_…</code>)</h2>
<p>Refund through the API: <code>POST /api/v1/payments/{id}/refunds</code> with an optional
<code>{"amount": 500, "reason": "damaged"}</code>. Without an amount, everything still refundable is refunded.
The refund succeeds at once: the payment becomes <code>partially_refunded</code> or <code>refunded</code> and the
webhook (<code>payment.partially_refunded</code>, again for every further partial refund, or
<code>payment.refunded</code>) is sent in the same moment.</p>
<h2>Live mode (<code>pk_live_…</code>)</h2>
<p>Live refunds move real money and are not requested through the API: a live key gets
<code>422 refunds_processed_manually</code> with a link to this page. Request the refund in the application
dashboard under <strong>Payments</strong>: the refund is recorded as <code>pending</code>, sends no webhook, and
reserves its amount. When the payment provider confirms it, the payment becomes <code>partially_refunded</code> or
<code>refunded</code> and the webhook is sent; a refund the provider declines releases its amount again.</p>
<h2>Rules</h2>
<ul>
<li>Only <code>paid</code> and <code>partially_refunded</code> payments can be refunded
(<code>409 payment_not_refundable</code> otherwise, with the payment's <code>status</code>).</li>
<li>The refundable amount is the amount less succeeded and pending refunds; asking for more gives
<code>422 refund_amount_exceeds_refundable</code> with <code>refundable_amount</code>.</li>
<li>Send an <code>Idempotency-Key</code>: a retried refund with the same key is never paid out twice.</li>
<li>Two refunds racing on one payment can never refund more than the payment: the second may get
<code>409 payment_busy</code>; retry it after a moment.</li>
</ul>
<p class="muted">Amounts are integers in the currency's minor unit (cents). See the <a href="/docs">API reference</a>.</p>
</div>`
})

/** The `/docs/refunds` answer, with the security headers every page has. */
export const refunds = () => respond(refundsPage)

/**
 * The reference page's Content-Security-Policy: its two inline scripts (Scalar, bundled, and the call that renders
 * the contract) allowed by their hashes and nothing else; Scalar injects its styles inline, shows data: images and
 * sends "try it" requests to this server only. No framing (clickjacking), no forms, no other origin.
 */
export const referencePolicy = (html: string) => {
  const hashes = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(
    ([, source]) =>
      `'sha256-${createHash("sha256")
        .update(source ?? "")
        .digest("base64")}'`
  )
  return [
    "default-src 'none'",
    `script-src ${hashes.join(" ")}`,
    "style-src 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'"
  ].join("; ")
}

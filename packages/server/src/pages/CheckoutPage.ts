/**
 * The hosted checkout's pages (decisions §6): a pending test payment with the simulator's Pay, Fail and
 * Let-it-expire, the outcome or current status otherwise. Everything shown is escaped (Html.ts); the page
 * needs no JavaScript.
 */
import { Money, type Payment } from "@kassa/core"
import { type Html, html } from "./Html.ts"
import { page } from "./Layout.ts"

/** An amount in minor units for the payment's locale and currency (JPY has no decimals, …): the core decides. */
export const formatAmount = Money.format

const statusText: Record<Payment.PaymentStatus, string> = {
  pending: "Waiting for payment",
  paid: "Paid",
  failed: "Payment failed",
  cancelled: "Cancelled by the shop",
  expired: "Expired",
  partially_refunded: "Paid (partly refunded)",
  refunded: "Refunded"
}

const summary = (payment: Payment.Payment): Html => html`
<p class="muted">Pay ${payment.description === null ? "your order" : html`for <strong>${payment.description}</strong>`}</p>
<div class="amount">${formatAmount(payment.amount, payment.currency, payment.locale)}</div>
<dl class="summary">
  <dt>Order</dt><dd>${payment.order_reference}</dd>
  <dt>Method</dt><dd>${payment.method}</dd>
  <dt>Payment</dt><dd><code>${payment.id}</code></dd>
</dl>`

export interface PayerValues {
  readonly name: string
  readonly email: string
  readonly phone: string
  readonly method: string
}

export type FieldMessages = Partial<Record<keyof PayerValues | "form", string>>

const field = (
  id: keyof PayerValues,
  label: string,
  type: string,
  values: PayerValues,
  errors: FieldMessages,
  attributes: Html
) => html`
<label for="${id}">${label}</label>
<input id="${id}" name="${id}" type="${type}" value="${values[id]}" ${attributes}
  ${errors[id] === undefined ? "" : html`aria-invalid="true" aria-describedby="${id}-error"`}>
${errors[id] === undefined ? "" : html`<div class="error" id="${id}-error">${errors[id]}</div>`}`

/** The simulator's form for a pending test payment. */
export const pendingPage = (options: {
  readonly payment: Payment.Payment
  readonly methods: ReadonlyArray<string>
  readonly csrf: string
  readonly values?: PayerValues
  readonly errors?: FieldMessages
}): Html => {
  const { payment, methods, csrf } = options
  const values = options.values ?? { name: "", email: "", phone: "", method: payment.method }
  const errors = options.errors ?? {}
  const methodChoice =
    methods.length > 1
      ? html`<fieldset><legend>Payment method</legend>${methods.map(
          (method) =>
            html`<label class="choice"><input type="radio" name="method" value="${method}" ${
              method === values.method ? html`checked` : ""
            }> ${method}</label>`
        )}</fieldset>`
      : html`<input type="hidden" name="method" value="${payment.method}">`
  return page({
    title: `Pay ${formatAmount(payment.amount, payment.currency, payment.locale)} — Kassa`,
    tag: "Test mode",
    narrow: true,
    lang: payment.locale,
    body: html`<div class="card">
<h1>Checkout</h1>
${summary(payment)}
${errors.form === undefined ? "" : html`<div class="notice" role="alert">${errors.form}</div>`}
<form method="post" action="/checkout/${payment.id}" novalidate>
<input type="hidden" name="csrf" value="${csrf}">
${field("name", "Name", "text", values, errors, html`autocomplete="name" required maxlength="255"`)}
${field("email", "E-mail (optional)", "email", values, errors, html`autocomplete="email" maxlength="255"`)}
${field("phone", "Phone (optional)", "tel", values, errors, html`autocomplete="tel" maxlength="32"`)}
${methodChoice}
<div class="actions">
  <button class="primary" type="submit" name="action" value="pay">Pay</button>
  <button class="danger" type="submit" name="action" value="fail">Fail</button>
  <button class="secondary" type="submit" name="action" value="expire">Let it expire</button>
</div>
</form>
<p class="notice">This is the test-mode simulator: no money moves. <strong>Pay</strong> and <strong>Fail</strong>
record the details above as the payer.</p>
</div>`
  })
}

/** A payment that is no longer pending (or was just decided here): its status, and the way back to the shop. */
export const statusPage = (payment: Payment.Payment, note?: string): Html =>
  page({
    title: `${statusText[payment.status]} — Kassa`,
    tag: payment.mode === "test" ? "Test mode" : undefined,
    narrow: true,
    lang: payment.locale,
    body: html`<div class="card">
<h1>${statusText[payment.status]}</h1>
${summary(payment)}
<p><span class="status ${payment.status}">${payment.status}</span></p>
${note === undefined ? "" : html`<p class="muted">${note}</p>`}
${payment.return_url === null ? "" : html`<p><a href="${payment.return_url}">Back to the shop</a></p>`}
</div>`
  })

/**
 * A pending test payment whose application is suspended or disabled: it cannot be paid now, and nothing was
 * recorded. The way back to the shop stays.
 */
export const unavailablePage = (payment: Payment.Payment): Html =>
  page({
    title: "This payment cannot be paid now — Kassa",
    tag: payment.mode === "test" ? "Test mode" : undefined,
    narrow: true,
    lang: payment.locale,
    body: html`<div class="card">
<h1>This payment cannot be paid now</h1>
${summary(payment)}
<p class="muted">The shop cannot take payments at the moment, so nothing was paid or recorded. Please contact the
shop.</p>
${payment.return_url === null ? "" : html`<p><a href="${payment.return_url}">Back to the shop</a></p>`}
</div>`
  })

export const notFoundPage = (): Html =>
  page({
    title: "Payment not found — Kassa",
    narrow: true,
    body: html`<div class="card"><h1>Payment not found</h1><p class="muted">Check the link the shop gave you.</p></div>`
  })

export const refusedPage = (): Html =>
  page({
    title: "Request refused — Kassa",
    narrow: true,
    body: html`<div class="card"><h1>This request was refused</h1>
<p class="muted">The form was not sent from this checkout page, or the page is too old. Open the payment link
again and retry.</p></div>`
  })

/**
 * Where the payment provider sends the customer back (`/checkout/{id}/return`, decisions §10): the payment's status;
 * the way back to the shop only once it is final, since a pending live payment waits for the provider's word.
 */
export const returnPage = (payment: Payment.Payment): Html =>
  payment.status === "pending"
    ? page({
        title: `${statusText[payment.status]} — Kassa`,
        narrow: true,
        lang: payment.locale,
        body: html`<div class="card">
<h1>${statusText[payment.status]}</h1>
${summary(payment)}
<p><span class="status ${payment.status}">${payment.status}</span></p>
<p class="muted">The payment provider has not confirmed this payment yet. Reload this page in a moment.</p>
</div>`
      })
    : statusPage(payment)

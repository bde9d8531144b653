/**
 * The hosted checkout's pages (decisions §6): a pending test payment with the simulator's Pay, Fail and
 * Let-it-expire, the outcome or current status otherwise. Everything shown is escaped (Html.ts); the page
 * needs no JavaScript. It names the application paid and speaks the payment's locale (CheckoutMessages.ts), and
 * shows the application's logo and brand colour when the operator set them (the core's `CheckoutBranding` checked
 * and derived them; the route allows the logo's origin in the page's CSP).
 */
import { CheckoutBranding, Money, type Payment } from "@kassa/core"
import * as CheckoutMessages from "./CheckoutMessages.ts"
import { type Html, html, trusted } from "./Html.ts"
import { type PageOptions, page } from "./Layout.ts"

/** An amount in minor units for the payment's locale and currency (JPY has no decimals, …): the core decides. */
export const formatAmount = Money.format

/**
 * What a checkout page shows of a payment: the payment, the name of the application it pays (when known) and that
 * application's branding.
 */
export interface CheckoutSubject {
  readonly payment: Payment.Payment
  readonly applicationName: string | null
  readonly branding: CheckoutBranding.Branding
}

/**
 * The brand colour on the pay button (its text and border too) and on the keyboard focus outline. The colours were
 * checked by the core; each is checked again here as `#rrggbb` before it becomes CSS, so a value that did not pass
 * is never rendered (no branding instead).
 */
const brandStyles = ({ color }: CheckoutBranding.Branding): Html | undefined => {
  if (color === null) return undefined
  const { brand, text, outline } = color
  if (![brand, text, outline].every(CheckoutBranding.isBrandColor)) return undefined
  // The border takes the outline's colour: a pale button still has an edge one can see on the white card.
  return trusted(
    `button.primary { background: ${brand}; color: ${text}; border-color: ${outline}; }\n` +
      `a:focus-visible, input:focus-visible, button:focus-visible { outline-color: ${outline}; }`
  )
}

/** The operator's logo above the heading, named by the application's name; no referrer goes to its host. */
const logo = ({ branding, applicationName }: CheckoutSubject): Html | string =>
  branding.logo === null
    ? ""
    : html`<img class="brand-logo" src="${branding.logo.url}" alt="${applicationName ?? ""}" referrerpolicy="no-referrer">`

/** A checkout page in the subject's branding. */
const checkoutPage = (subject: CheckoutSubject, options: PageOptions): Html => {
  const styles = brandStyles(subject.branding)
  return page(styles === undefined ? options : { ...options, styles })
}

const summary = ({ payment, applicationName }: CheckoutSubject, m: CheckoutMessages.CheckoutMessages): Html => html`
${payment.description === null ? "" : html`<p class="muted"><strong>${payment.description}</strong></p>`}
<div class="amount">${formatAmount(payment.amount, payment.currency, payment.locale)}</div>
<dl class="summary">
  ${applicationName === null ? "" : html`<dt>${m.shop}</dt><dd>${applicationName}</dd>`}
  <dt>${m.order}</dt><dd>${payment.order_reference}</dd>
  <dt>${m.method}</dt><dd>${payment.method}</dd>
  <dt>${m.payment}</dt><dd><code>${payment.id}</code></dd>
</dl>`

/** A message with `{pay}` / `{fail}` placeholders, the buttons' names in bold (each part escaped). */
const withButtons = (template: string, m: CheckoutMessages.CheckoutMessages): Html =>
  html`${template
    .split(/(\{pay\}|\{fail\})/)
    .map((part) =>
      part === "{pay}" ? html`<strong>${m.pay}</strong>` : part === "{fail}" ? html`<strong>${m.fail}</strong>` : part
    )}`

/** The page title: the application's name when known, then what the page is about. */
const titleOf = (subject: CheckoutSubject, what: string) =>
  `${subject.applicationName === null ? "" : `${subject.applicationName} — `}${what} — Kassa`

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

/**
 * The simulator's form for a pending test payment. The payer fields start as the payment's `customer` (what the
 * application already knows), until the customer sends other values.
 */
export const pendingPage = (options: {
  readonly subject: CheckoutSubject
  readonly methods: ReadonlyArray<string>
  readonly csrf: string
  readonly values?: PayerValues
  readonly errors?: FieldMessages
}): Html => {
  const { subject, methods, csrf } = options
  const { payment } = subject
  const { lang, messages: m } = CheckoutMessages.forLocale(payment.locale)
  const values = options.values ?? {
    name: payment.customer.name ?? "",
    email: payment.customer.email ?? "",
    phone: payment.customer.phone ?? "",
    method: payment.method
  }
  const errors = options.errors ?? {}
  const methodChoice =
    methods.length > 1
      ? html`<fieldset><legend>${m.paymentMethod}</legend>${methods.map(
          (method) =>
            html`<label class="choice"><input type="radio" name="method" value="${method}" ${
              method === values.method ? html`checked` : ""
            }> ${method}</label>`
        )}</fieldset>`
      : html`<input type="hidden" name="method" value="${payment.method}">`
  return checkoutPage(subject, {
    title: titleOf(subject, formatAmount(payment.amount, payment.currency, payment.locale)),
    tag: m.testMode,
    narrow: true,
    lang,
    body: html`<div class="card">
${logo(subject)}
<h1>${subject.applicationName ?? m.checkout}</h1>
${summary(subject, m)}
${errors.form === undefined ? "" : html`<div class="notice" role="alert">${errors.form}</div>`}
<form method="post" action="/checkout/${payment.id}" novalidate>
<input type="hidden" name="csrf" value="${csrf}">
${field("name", m.name, "text", values, errors, html`autocomplete="name" required maxlength="255"`)}
${field("email", m.emailOptional, "email", values, errors, html`autocomplete="email" maxlength="255"`)}
${field("phone", m.phoneOptional, "tel", values, errors, html`autocomplete="tel" maxlength="32"`)}
${methodChoice}
<div class="actions">
  <button class="primary" type="submit" name="action" value="pay">${m.pay}</button>
  <button class="danger" type="submit" name="action" value="fail">${m.fail}</button>
  <button class="secondary" type="submit" name="action" value="expire">${m.expire}</button>
</div>
</form>
<p class="notice">${withButtons(m.simulatorNotice, m)}</p>
</div>`
  })
}

const backToShop = (payment: Payment.Payment, m: CheckoutMessages.CheckoutMessages) =>
  payment.return_url === null ? "" : html`<p><a href="${payment.return_url}">${m.backToShop}</a></p>`

/** The card of a payment's status: the shop's logo, the status as a heading, the summary, then `after`. */
const statusCard = (
  subject: CheckoutSubject,
  m: CheckoutMessages.CheckoutMessages,
  after: Html
) => html`<div class="card">
${logo(subject)}
<h1>${m.status[subject.payment.status]}</h1>
${summary(subject, m)}
<p><span class="status ${subject.payment.status}">${subject.payment.status}</span></p>
${after}
</div>`

/**
 * A payment that is no longer pending (or was just decided here): its status, and the way back to the shop.
 * `note` picks a message (a live payment still pending is completed at its provider).
 */
export const statusPage = (subject: CheckoutSubject, note?: "completedAtProvider"): Html => {
  const { payment } = subject
  const { lang, messages: m } = CheckoutMessages.forLocale(payment.locale)
  return checkoutPage(subject, {
    title: titleOf(subject, m.status[payment.status]),
    tag: payment.mode === "test" ? m.testMode : undefined,
    narrow: true,
    lang,
    body: statusCard(
      subject,
      m,
      html`${note === undefined ? "" : html`<p class="muted">${m[note]}</p>`}
${backToShop(payment, m)}`
    )
  })
}

/**
 * A pending test payment whose application is suspended or disabled: it cannot be paid now, and nothing was
 * recorded. The way back to the shop stays.
 */
export const unavailablePage = (subject: CheckoutSubject): Html => {
  const { payment } = subject
  const { lang, messages: m } = CheckoutMessages.forLocale(payment.locale)
  return checkoutPage(subject, {
    title: titleOf(subject, m.unavailableTitle),
    tag: payment.mode === "test" ? m.testMode : undefined,
    narrow: true,
    lang,
    body: html`<div class="card">
${logo(subject)}
<h1>${m.unavailableTitle}</h1>
${summary(subject, m)}
<p class="muted">${m.unavailableText}</p>
${backToShop(payment, m)}
</div>`
  })
}

// No payment, so no locale: English.
const english = CheckoutMessages.forLocale(undefined).messages

export const notFoundPage = (): Html =>
  page({
    title: `${english.notFoundTitle} — Kassa`,
    narrow: true,
    body: html`<div class="card"><h1>${english.notFoundTitle}</h1><p class="muted">${english.notFoundText}</p></div>`
  })

export const refusedPage = (): Html =>
  page({
    title: `${english.refusedTitle} — Kassa`,
    narrow: true,
    body: html`<div class="card"><h1>${english.refusedTitle}</h1>
<p class="muted">${english.refusedText}</p></div>`
  })

/**
 * Where the payment provider sends the customer back (`/checkout/{id}/return`, decisions §10): the payment's status;
 * the way back to the shop only once it is final, since a pending live payment waits for the provider's word.
 */
export const returnPage = (subject: CheckoutSubject): Html => {
  const { payment } = subject
  if (payment.status !== "pending") return statusPage(subject)
  const { lang, messages: m } = CheckoutMessages.forLocale(payment.locale)
  return checkoutPage(subject, {
    title: titleOf(subject, m.status[payment.status]),
    narrow: true,
    lang,
    body: statusCard(subject, m, html`<p class="muted">${m.providerNotConfirmed}</p>`)
  })
}

/**
 * Webhooks (issue #6 §3): the URL events go to, the signing secret (regenerated behind a confirmation and shown once,
 * the previous one signing for 24 more hours), and a test event that goes through the real delivery engine.
 */
import { DateTime, Duration } from "effect"
import { type Html, html } from "../Html.ts"
import {
  type AppFrame,
  appPage,
  appPath,
  confirmCard,
  noticeBlock,
  secretReveal,
  shownUrl
} from "./ApplicationShared.ts"
import { field, formatTime, linkButton, pageHead } from "./Components.ts"
import { csrfField } from "./DashboardLayout.ts"

export interface WebhooksView {
  readonly now: DateTime.Utc
  readonly production: boolean
  readonly notice: string | null
  /** The URL as typed, when the form is shown again with an error. */
  readonly url?: string | undefined
  readonly urlError?: string | undefined
  /** Why the test event could not be sent. */
  readonly testError?: string | undefined
}

const grace = Duration.hours(24)

/** Until when the previous secret still signs, if it does. */
const previousUntil = (frame: AppFrame, now: DateTime.Utc): DateTime.Utc | null => {
  const rotated = frame.application.webhook_secret_rotated_at
  if (rotated === null) return null
  const until = DateTime.addDuration(rotated, grace)
  return DateTime.isLessThan(now, until) ? until : null
}

export const webhooksPage = (frame: AppFrame, view: WebhooksView, status = 200) => {
  const manage = frame.can("manage_webhooks")
  const { application } = frame
  const until = previousUntil(frame, view.now)
  const hint = view.production
    ? "Test and live events both go here; data.mode tells them apart. Must be an https URL. Leave empty to stop sending."
    : "Test and live events both go here; data.mode tells them apart. An absolute http or https URL (https in production). Leave empty to stop sending."
  const stored = application.webhook_url
  const shown = shownUrl(frame, stored)
  // The form starts with the stored URL only when it is shown whole; a developer whose URL carries a user part or a
  // query sees it masked and types a new one (the masked text would not be the URL).
  const masked = shown !== stored
  const current =
    shown === null ? html`<span class="muted">none set</span>` : html`<code id="webhook-url">${shown}</code>`
  const urlCard = manage
    ? html`${masked ? html`<dl class="summary"><dt>Webhook URL</dt><dd>${current}</dd></dl><p class="hint">Its user part and query are shown only to owners, as they may carry the receiver's credentials. Type a new URL to replace it; saving an empty field removes it.</p>` : ""}<form method="post" action="${appPath(frame, "/webhooks/url")}" novalidate>${csrfField(frame.viewer)}
${field({
  name: "url",
  label: masked ? "New webhook URL" : "Webhook URL",
  type: "url",
  value: view.url ?? (masked ? "" : (stored ?? "")),
  hint,
  error: view.urlError,
  attributes: html` maxlength="2048" placeholder="https://shop.example/webhooks/kassa" autocomplete="off"`
})}
<div class="actions"><button type="submit" class="primary">Save URL</button></div>
</form>`
    : html`<dl class="summary"><dt>Webhook URL</dt><dd>${current}</dd></dl>`

  const body = html`${pageHead(
    "Webhooks",
    "Kassa posts a signed event to your URL every time a payment changes status."
  )}
${noticeBlock(view.notice)}
<div class="card">
<h2>Where events go</h2>
${urlCard}
</div>
<div class="card">
<h2>Signing secret</h2>
<p>Every event carries <code>X-Service-Signature</code>, an HMAC of its body under this application's secret (<code>whsec_…</code>). Verify it before trusting an event.</p>
<dl class="summary">
<dt>Last regenerated</dt><dd>${application.webhook_secret_rotated_at === null ? "never (the secret given when the application was created)" : formatTime(application.webhook_secret_rotated_at)}</dd>
${until === null ? "" : html`<dt>Previous secret</dt><dd>still signs too, until ${formatTime(until)}</dd>`}
</dl>
${
  manage
    ? linkButton(appPath(frame, "/webhooks/secret"), "Regenerate secret…", { small: false })
    : html`<p class="muted">The secret is shown only once, to whoever regenerates it.</p>`
}
</div>
<div class="card">
<h2>Send a test event</h2>
<p>Creates a test-mode payment for this application and pays it in the simulator, so a real <code>payment.paid</code> event goes to your URL through the normal delivery engine, signed and retried like any other.</p>
${view.testError === undefined ? "" : html`<div class="error" role="alert">${view.testError}</div>`}
${application.webhook_url === null ? html`<p class="hint">No webhook URL is set, so its attempt fails with <code>no_webhook_url</code> — still shown under Deliveries.</p>` : ""}
${
  manage
    ? html`<form method="post" action="${appPath(frame, "/webhooks/test")}">${csrfField(frame.viewer)}<div class="actions"><button type="submit" class="secondary">Send test event</button><a class="button secondary" href="${appPath(frame, "/deliveries")}">See deliveries</a></div></form>`
    : html`<p><a href="${appPath(frame, "/deliveries")}">See deliveries</a></p>`
}
</div>`
  return appPage(frame, "webhooks", "Webhooks", body, status)
}

export const confirmSecretPage = (frame: AppFrame) => {
  const body = html`${pageHead(
    "Regenerate the signing secret?",
    "A new secret signs every event from now on; it is shown once, on the next page."
  )}
${confirmCard({
  frame,
  details: html`<p>For the next 24 hours every event carries two signatures, the new secret's first and the current one's second, so your receiver keeps accepting events while you switch it over. After that only the new secret signs.</p>`,
  consequence: html`Have your receiver's configuration ready: the new secret is not shown again.`,
  action: appPath(frame, "/webhooks/secret"),
  button: "Regenerate secret",
  back: appPath(frame, "/webhooks")
})}`
  return appPage(frame, "webhooks", "Regenerate secret", body)
}

export const newSecretPage = (frame: AppFrame, secret: string, until: DateTime.Utc): Html => html`${pageHead(
  "New signing secret",
  "Put it into your webhook receiver's configuration now."
)}
<div class="card">
${secretReveal({
  id: "webhook-secret",
  label: "Webhook signing secret",
  value: secret,
  warning: html`<strong>This secret will not be shown again.</strong> The previous secret keeps signing too until ${formatTime(until)} (24 hours), so no event is lost while you switch. Lost it? Regenerate another.`
})}
<div class="actions"><a class="button primary" href="${appPath(frame, "/webhooks")}">Done, back to webhooks</a></div>
</div>`

export const newSecretResponse = (frame: AppFrame, secret: string, until: DateTime.Utc) =>
  appPage(frame, "webhooks", "New secret", newSecretPage(frame, secret, until))

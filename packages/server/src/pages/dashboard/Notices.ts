/**
 * The one table of messages the dashboards show after an action, by the code a redirect puts in `?notice=`
 * (DashboardRoute.redirect): fixed text, so the request only picks one; an unknown code shows nothing.
 */
import { type Html, html } from "../Html.ts"

/** A notice's message: plain text (escaped) or markup of the table's own. */
export type Notice = Html | string

const notices: Readonly<Record<string, Notice>> = {
  // Operator: applications
  approved: "The application is approved: its API keys work now.",
  reactivated: "The application is active again: its API keys work.",
  suspended: "The application is suspended: its API keys are refused.",
  disabled: "The application is disabled: its API keys are refused.",
  settings_saved: "The settings are saved.",
  settings_unchanged: "Nothing to save: the settings were already like this.",
  member_saved: "The member is saved.",
  provider_linked:
    "The payment provider account is linked: the provider accepted the key and has a webhook endpoint for it.",
  provider_retired:
    "The payment provider link is retired: new live payments are refused until another account is linked.",
  // Operator: at the provider
  provider_read: "Kassa read it from the provider now and applied the answer.",
  provider_no_answer: "The provider did not answer (or refused): nothing changed; the background round tries again.",
  provider_nothing: "There is nothing to read at the provider for it (no checkout there, or no provider refund).",
  discrepancy_refunded:
    "The payment's whole amount is refunded at the provider; the discrepancy is resolved (the payment's status is unchanged).",
  discrepancy_refund_no_answer:
    "The provider did not answer: nothing is resolved. Refunding again is safe: it makes no second refund.",
  // Operator: users
  user_created: "The user is created and can sign in now.",
  password_set: "The new password is set; every session of the user has ended.",
  deactivated: "The user is deactivated: signed out everywhere, and sign-in is refused.",
  user_reactivated: "The user is active again and can sign in.",
  admin_granted: "The user is an operator admin now.",
  admin_revoked: "The user is no longer an operator admin.",
  // An application's pages
  key_revoked: html`The key is revoked. Requests with it now get <code>401 invalid_api_key</code>.`,
  url_saved: html`Webhook URL saved. The next delivery attempt uses it.`,
  url_cleared: html`Webhook URL removed. Attempts fail with <code>no_webhook_url</code> until you set one.`,
  // Shown on the application's webhooks page, so the relative link is its deliveries page.
  test_sent: html`Test event sent: a test payment was created and paid, so its <code>payment.paid</code> event is on its way. Follow it under <a href="deliveries">Deliveries</a>.`,
  resent: html`Resend started: one manual attempt with a fresh signature is being made now. Reload to see its result.`,
  refund_requested: html`Refund requested. It is pending until the provider confirms it; the payment's status and webhooks change only then.`,
  refund_succeeded: html`Refunded: the provider confirmed the refund. The payment's status and its webhook have changed.`,
  refund_failed: html`The provider refused the refund: nothing was refunded, and the amount can be refunded again.`,
  // A test payment's page (issue 22 §3): the API's use cases, so the same event and webhook.
  simulated_paid: html`Simulated: the test payment is paid, and its <code>payment.paid</code> webhook is on its way.`,
  simulated_failed: html`Simulated: the test payment failed, and its <code>payment.failed</code> webhook is on its way.`,
  simulated_expired: html`Simulated: the test payment expired, and its <code>payment.expired</code> webhook is on its way.`,
  test_cancelled: html`The test payment is cancelled, and its <code>payment.cancelled</code> webhook is on its way.`,
  test_refunded: html`Refunded: a test refund succeeds at once. The payment's status and its webhook have changed.`,
  member_added: "The member is saved: they can open this application's dashboard with their role now.",
  role_changed: "The role is changed. It applies to their next page.",
  role_unchanged: "Nothing changed: the member already had this role.",
  member_removed: "The member is removed: they can no longer open this application's dashboard.",
  // The account page
  password_changed: "Your password is changed. Every other browser signed in to this account is signed out."
}

/** The message of a `?notice=` code, if it names one. */
export const noticeOf = (code: string | null): Notice | undefined =>
  code !== null && Object.hasOwn(notices, code) ? notices[code] : undefined

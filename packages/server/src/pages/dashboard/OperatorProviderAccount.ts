/**
 * The payment provider section of the operator's application page (issue 12 §2, issue 21 §1, decisions §10, §11): the
 * linked provider account (named by its link's provider; the key only in its display form), a form to link a key of
 * either provider (checked with the provider first) and a retire button. Templates only: every value goes through
 * `html`, so it is escaped; the key typed is never rendered back.
 */
import { OperatorSchemas } from "@kassa/core"
import { type Html, html } from "../Html.ts"
import { actionForm, alert, badge, field, formatTime, modeBadge, select, sentence } from "./Components.ts"
import { csrfField, type Viewer } from "./DashboardLayout.ts"
import type { ProviderLinkView } from "./Views.ts"

export interface ProviderAccountView {
  readonly viewer: Viewer
  readonly applicationId: string
  readonly link: ProviderLinkView | null
  /** Why the last link attempt failed (the provider refused the key, or did not answer). */
  readonly problem?: string | undefined
}

/** The providers the operator API links, by their names as operators read them (`stripe` → "Stripe"). */
const providers = OperatorSchemas.LinkProvider.literals.map((value) => [value, sentence(value)] as const)

export const providerAccountSection = (view: ProviderAccountView): Html => {
  const path = `/dashboard/operator/applications/${view.applicationId}/provider-account`
  const { link } = view
  const current =
    link === null
      ? html`<p>No payment provider account is linked: live payments of this application are refused.</p>`
      : html`<dl class="summary">
<dt>Provider</dt><dd>${link.provider} ${badge(link.status)}</dd>
<dt>Account</dt><dd><code>${link.accountId}</code></dd>
<dt>Key</dt><dd><code>${link.keyDisplay}</code></dd>
<dt>Mode</dt><dd>${modeBadge(link.livemode ? "live" : "test")}${link.livemode ? "" : html` <span class="hint">${link.provider}'s test payments only</span>`}</dd>
<dt>Webhook endpoint</dt><dd>${
          link.webhookEndpointId === null
            ? html`<span class="hint">None: each payment names this link's webhook URL</span>`
            : html`<code>${link.webhookEndpointId}</code>`
        }</dd>
<dt>Linked</dt><dd>${formatTime(link.linkedAt)}</dd>
</dl>
<div class="actions">${actionForm(view.viewer, `${path}/retire`, "Retire this link", "danger")}</div>`
  // The linked provider first chosen, so linking another key of it is one field.
  const chosen = providers.find(([, label]) => label === link?.provider)?.[0] ?? "stripe"
  return html`<section class="card" aria-labelledby="provider-heading">
<h2 id="provider-heading">Payment provider</h2>
${alert(view.problem)}
${current}
<form method="post" action="${path}" novalidate autocomplete="off">
${csrfField(view.viewer)}
${select({ name: "provider", label: "Provider", value: chosen, choices: providers })}
${field({
  name: "secret_key",
  label: link === null ? "Secret API key" : "Link another key",
  type: "password",
  hint: "The provider account's secret API key: Stripe's sk_… or rk_… key, Mollie's live_… or test_… API key (a test key to rehearse with the provider's test payments). Kassa checks it with the provider, creates a webhook endpoint there when the provider has them (Stripe) and keeps the key encrypted; it is never shown again. A new key retires the current link, whichever its provider.",
  error: view.problem === undefined ? undefined : "Not linked: see above.",
  attributes: html` autocomplete="off" spellcheck="false"`
})}
<div class="actions"><button type="submit" class="primary">Check with the provider and link</button></div>
</form>
</section>`
}

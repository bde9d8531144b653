/**
 * API keys (issue #6 §3): the list shows only each key's display form; a new or rolled key is shown whole once, on
 * the page that answers the post, with a copy button. Rolling and revoking each ask first.
 */
import { type Html, html } from "../Html.ts"
import { type AppFrame, appPage, appPath, confirmCard, noticeBlock, secretReveal } from "./ApplicationShared.ts"
import { badge, formatTime, linkButton, modeBadge, pageHead, select, table } from "./Components.ts"
import { csrfField } from "./DashboardLayout.ts"
import type { IssuedKeyView, KeyView } from "./Views.ts"

const keyRow = (frame: AppFrame, key: KeyView): Html => {
  const actions =
    frame.can("manage_keys") && key.revoked_at === null
      ? html`${linkButton(appPath(frame, `/keys/${key.id}/roll`), "Roll")} ${linkButton(appPath(frame, `/keys/${key.id}/revoke`), "Revoke")}`
      : ""
  return html`<tr>
<td><code>${key.display}</code></td>
<td>${modeBadge(key.mode)}</td>
<td>${formatTime(key.created_at)}</td>
<td>${key.last_used_at === null ? html`<span class="muted">never</span>` : formatTime(key.last_used_at)}</td>
<td>${key.revoked_at === null ? badge("active") : html`${badge("revoked")} <span class="muted">${formatTime(key.revoked_at)}</span>`}</td>
${frame.can("manage_keys") ? html`<td>${actions}</td>` : ""}
</tr>`
}

export const keysPage = (frame: AppFrame, keys: ReadonlyArray<KeyView>, notice: string | null) => {
  const manage = frame.can("manage_keys")
  const active = keys.filter((key) => key.revoked_at === null)
  const revoked = keys.filter((key) => key.revoked_at !== null)
  const headings = ["Key", "Mode", "Created", "Last used", "Status", ...(manage ? ["Actions"] : [])]
  const body = html`${pageHead(
    "API keys",
    html`Your servers send these as <code>Authorization: Bearer</code>. A key is shown whole only once, when it is created.`
  )}
${noticeBlock(notice)}
${
  manage
    ? html`<div class="card">
<h2>Create a key</h2>
<p class="muted">Test keys use the built-in simulator; live keys move real money through the linked provider account.</p>
<form method="post" action="${appPath(frame, "/keys")}" class="filters">${csrfField(frame.viewer)}
${select({
  name: "mode",
  label: "Mode",
  value: "test",
  choices: [
    ["test", "Test"],
    ["live", "Live"]
  ]
})}
<div><button type="submit" class="primary">Create key</button></div>
</form>
</div>`
    : ""
}
<h2>Active keys</h2>
${table(
  headings,
  active.map((key) => keyRow(frame, key)),
  "No active keys. Create one to start using the API.",
  "Active API keys"
)}
${
  revoked.length === 0
    ? ""
    : html`<h2>Revoked keys</h2>${table(
        headings,
        revoked.map((key) => keyRow(frame, key)),
        "",
        "Revoked API keys"
      )}`
}`
  return appPage(frame, "keys", "API keys", body)
}

/** The page that answers a create or a roll: the whole key, this once. */
export const issuedKeyPage = (frame: AppFrame, key: IssuedKeyView, rolled: KeyView | null) => {
  const body = html`${pageHead(
    rolled === null ? `New ${key.mode} key` : `${key.mode === "live" ? "Live" : "Test"} key rolled`,
    rolled === null
      ? "Copy the key into your server's configuration now."
      : html`The old key <code>${rolled.display}</code> is revoked: requests with it now get <code>401 invalid_api_key</code>.`
  )}
<div class="card">
${secretReveal({
  id: "issued-key",
  label: `Your new ${key.mode} key`,
  value: key.key,
  warning: html`<strong>This key will not be shown again.</strong> Kassa keeps only a hash of it; afterwards only <code>${key.display}</code> is shown. If you lose it, create a new key.`
})}
<div class="actions"><a class="button primary" href="${appPath(frame, "/keys")}">Done, back to API keys</a></div>
</div>`
  return appPage(frame, "keys", rolled === null ? "New key" : "Key rolled", body)
}

export const confirmKeyPage = (frame: AppFrame, key: KeyView, action: "roll" | "revoke") => {
  const details = html`<dl class="summary" style="margin-top:0"><dt>Key</dt><dd><code>${key.display}</code></dd><dt>Mode</dt><dd>${modeBadge(key.mode)}</dd>
<dt>Created</dt><dd>${formatTime(key.created_at)}</dd><dt>Last used</dt><dd>${formatTime(key.last_used_at)}</dd></dl>`
  const body = html`${pageHead(
    action === "roll" ? "Roll this key?" : "Revoke this key?",
    action === "roll"
      ? "Rolling creates a new key and revokes this one in the same moment."
      : "Revoking stops this key for good; there is no undo."
  )}
${confirmCard({
  frame,
  details,
  consequence:
    action === "roll"
      ? html`Requests with <code>${key.display}</code> get <code>401 invalid_api_key</code> at once. The new key is shown on the next page, once — have your configuration ready.`
      : html`Requests with <code>${key.display}</code> get <code>401 invalid_api_key</code> at once. Servers still using it stop working.`,
  action: appPath(frame, `/keys/${key.id}/${action}`),
  button: action === "roll" ? "Roll key" : "Revoke key",
  back: appPath(frame, "/keys")
})}`
  return appPage(frame, "keys", action === "roll" ? "Roll key" : "Revoke key", body)
}

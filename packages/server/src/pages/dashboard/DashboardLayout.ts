/**
 * The dashboards' frame: a top bar (product, where you are, who you are, sign out) and a side navigation — the
 * operator's sections for operator admins, an application's sections inside one. Same stylesheet base as the
 * checkout; one external script (`/dashboard/assets/dashboard.js`, copy buttons) and nothing inline, so the
 * Content-Security-Policy forbids every other script.
 */
import type { Html } from "../Html.ts"
import { html, trusted } from "../Html.ts"
import { baseStyles, respond } from "../Layout.ts"

const styles = trusted(`${baseStyles}
body { display: flex; flex-direction: column; min-height: 100vh; }
header.top { justify-content: space-between; }
header.top .left, header.top .right { display: flex; align-items: center; gap: 12px; }
header.top .who { color: var(--muted); font-size: 14px; }
header.top form { margin: 0; }
header.top button { padding: 6px 12px; font-size: 14px; }
.frame { display: flex; flex: 1; width: 100%; max-width: 1280px; margin: 0 auto; }
nav.side { width: 220px; flex-shrink: 0; padding: 24px 12px; }
nav.side h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); margin: 18px 12px 6px; }
nav.side h2:first-child { margin-top: 0; }
nav.side a { display: block; padding: 7px 12px; border-radius: 8px; color: var(--ink); text-decoration: none; font-size: 14px; }
nav.side a:hover { background: #e9edf5; }
nav.side a[aria-current=page] { background: #e3e9fb; color: var(--accent); font-weight: 600; }
nav.side .app-name { padding: 0 12px 4px; font-weight: 600; font-size: 14px; overflow-wrap: anywhere; }
a:focus-visible, select:focus-visible, textarea:focus-visible { outline: 3px solid rgba(40,81,224,.35); outline-offset: 1px; }
main.dash { flex: 1; max-width: none; margin: 0; padding: 28px 28px 48px; min-width: 0; }
.page-head { display: flex; align-items: flex-start; justify-content: space-between; gap: 16px; margin-bottom: 18px; flex-wrap: wrap; }
.page-head h1 { margin: 0; } .page-head p { margin: 4px 0 0; }
.card + .card { margin-top: 18px; } .card h2:first-child { margin-top: 0; }
.card.flush { padding: 0; overflow-x: auto; } .card.flush table { margin: 0; }
.card.flush th:first-child, .card.flush td:first-child { padding-left: 20px; }
th { color: var(--muted); font-weight: 600; font-size: 13px; background: #fafbfd; }
tbody tr:hover { background: #fafbfd; } td a { color: var(--accent); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.empty { padding: 28px; text-align: center; color: var(--muted); }
input[type=text], input[type=email], input[type=password], input[type=url], input[type=number], input[type=search], select, textarea {
  width: 100%; padding: 9px 11px; border: 1px solid #c9d0dc; border-radius: 8px; font: inherit; background: #fff; }
textarea { min-height: 80px; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(240px, 1fr)); gap: 4px 18px; }
.filters { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-end; margin-bottom: 16px; }
.filters label { margin: 0 0 4px; font-size: 13px; } .filters > div { min-width: 160px; }
.hint { color: var(--muted); font-size: 13px; margin-top: 4px; font-weight: 400; }
.secret { display: flex; gap: 8px; align-items: stretch; margin-top: 8px; }
.secret input { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 14px; }
.notice.ok { background: #e9f7ef; border-color: #b7e2c8; }
.notice.warn { background: #fff8e6; }
.inline { display: inline; margin: 0; }
button.small { padding: 5px 10px; font-size: 13px; }
a.button { display: inline-block; font-weight: 600; border-radius: 8px; padding: 10px 16px; text-decoration: none; }
a.button.primary { background: var(--accent); color: #fff; } a.button.secondary { background: #fff; border: 1px solid #c9d0dc; color: var(--ink); }
.pager { display: flex; justify-content: flex-end; gap: 10px; padding: 12px 20px; }
td.nowrap { white-space: nowrap; }
dl.details { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 8px; margin: 0; font-size: 13px; }
dl.details dt { color: var(--muted); } dl.details dd { margin: 0; overflow-wrap: anywhere; }
.timeline { list-style: none; padding: 0; margin: 0; } .timeline li { padding: 10px 0; border-bottom: 1px solid var(--line); }
.timeline li:last-child { border-bottom: 0; }
pre.body { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 240px; margin: 6px 0 0; }
.status.active, .status.succeeded { background: #e3f4ea; color: var(--ok); }
.status.pending_review, .status.pending { background: #fff3d6; color: #8a5a00; }
.status.suspended, .status.disabled, .status.revoked { background: #fdecea; color: var(--bad); }
.mode { font-size: 12px; font-weight: 600; border-radius: 6px; padding: 1px 6px; background: #eef1f6; color: var(--muted); }
.mode.live { background: #e3e9fb; color: var(--accent); }
.auth { max-width: 420px; margin: 48px auto; padding: 0 20px; width: 100%; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0,0,0,0); border: 0; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 12px; top: 12px; background: #fff; padding: 8px 12px; border-radius: 8px; z-index: 10; }
`)

/** Where the page is, for the navigation: the operator's sections, or one application's. */
export type Place =
  | { readonly _tag: "Operator"; readonly section: OperatorSection }
  | {
      readonly _tag: "Application"
      readonly section: ApplicationSection
      readonly applicationId: string
      readonly applicationName: string
    }
  | { readonly _tag: "Home" }
  | { readonly _tag: "Account" }

export type OperatorSection = "applications" | "deliveries" | "payments" | "provider" | "users" | "audit"
export type ApplicationSection = "overview" | "keys" | "webhooks" | "deliveries" | "payments" | "members"

export interface Viewer {
  readonly email: string
  readonly operatorAdmin: boolean
  readonly csrf: string
}

const operatorLinks: ReadonlyArray<readonly [OperatorSection, string, string]> = [
  ["applications", "Applications", "/dashboard/operator/applications"],
  ["deliveries", "Deliveries", "/dashboard/operator/deliveries"],
  ["payments", "Payments", "/dashboard/operator/payments"],
  ["provider", "At Stripe", "/dashboard/operator/provider"],
  ["users", "Users", "/dashboard/operator/users"],
  ["audit", "Audit log", "/dashboard/operator/audit"]
]

const applicationLinks: ReadonlyArray<readonly [ApplicationSection, string, string]> = [
  ["overview", "Overview", ""],
  ["keys", "API keys", "/keys"],
  ["webhooks", "Webhooks", "/webhooks"],
  ["deliveries", "Deliveries", "/deliveries"],
  ["payments", "Payments", "/payments"],
  ["members", "Members", "/members"]
]

const link = (href: string, label: string, current: boolean) =>
  html`<a href="${href}"${current ? trusted(' aria-current="page"') : ""}>${label}</a>`

const navigation = (place: Place, viewer: Viewer): Html => {
  const operator = viewer.operatorAdmin
    ? html`<h2>Operator</h2>${operatorLinks.map(([section, label, href]) =>
        link(href, label, place._tag === "Operator" && place.section === section)
      )}`
    : html`<h2>Dashboard</h2>${link("/dashboard", "Your applications", place._tag === "Home")}`
  const application =
    place._tag === "Application"
      ? html`<h2>Application</h2><div class="app-name">${place.applicationName}</div>${applicationLinks.map(
          ([section, label, suffix]) =>
            link(`/dashboard/apps/${place.applicationId}${suffix}`, label, place.section === section)
        )}`
      : ""
  return html`<nav class="side" aria-label="Dashboard">${operator}${application}</nav>`
}

/** The hidden field every dashboard form carries. */
export const csrfField = (viewer: Pick<Viewer, "csrf">): Html =>
  html`<input type="hidden" name="csrf" value="${viewer.csrf}">`

export interface DashboardPage {
  readonly title: string
  readonly place: Place
  readonly viewer: Viewer
  readonly body: Html
  /** A one-line message about the last action (from a fixed list, never from the request). */
  readonly notice?: string | undefined
}

const head = (title: string, script: boolean): Html => html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<link rel="icon" href="data:,">
<title>${title} · Kassa</title>
<style>${styles}</style>
${script ? html`<script src="/dashboard/assets/dashboard.js" defer></script>` : ""}
</head>`

export const document = ({ title, place, viewer, body, notice }: DashboardPage): Html => html`<!doctype html>
<html lang="en">
${head(title, true)}
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <div class="left"><a class="logo" href="/dashboard" style="color:inherit;text-decoration:none">Kassa</a><span class="tag">${viewer.operatorAdmin ? "Operator" : "Dashboard"}</span></div>
  <div class="right"><a class="who" href="/dashboard/account"${place._tag === "Account" ? trusted(' aria-current="page"') : ""}><span class="sr-only">Your account: </span>${viewer.email}</a>
    <form method="post" action="/dashboard/logout">${csrfField(viewer)}<button type="submit" class="secondary">Sign out</button></form></div>
</header>
<div class="frame">
${navigation(place, viewer)}
<main class="dash" id="main">
${notice === undefined ? "" : html`<div class="notice ok" role="status">${notice}</div>`}
${body}
</main>
</div>
</body>
</html>`

/** A dashboard page as a response (security headers, own scripts only). */
export const respondPage = (page: DashboardPage, status = 200) => respond(document(page), { status, scripts: true })

/** Pages without a signed-in user (sign-in, refusals): the frame without navigation. */
export const plainDocument = (title: string, body: Html): Html => html`<!doctype html>
<html lang="en">
${head(title, false)}
<body>
<header class="top"><div class="left"><span class="logo">Kassa</span><span class="tag">Dashboard</span></div></header>
<main class="auth" id="main">${body}</main>
</body>
</html>`

/** The copy buttons: `<button data-copy="element-id">` copies that input's value. Works without it too. */
export const script = `document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null
  if (button === null) return
  const source = document.getElementById(button.getAttribute("data-copy"))
  if (source === null) return
  const value = "value" in source ? source.value : source.textContent
  const done = () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy" }, 2000) }
  if (navigator.clipboard) navigator.clipboard.writeText(value).then(done, () => { source.select(); document.execCommand("copy"); done() })
  else { source.select(); document.execCommand("copy"); done() }
})
`

/**
 * The dashboards' frame: a top bar (product, where you are, who you are, sign out) and a side navigation — the
 * operator's sections for operator admins, an application's sections inside one. Same stylesheet base as the
 * checkout, then the dashboards' own (`assets/dashboard.css`); one external script (`assets/dashboard.js`, copy
 * buttons) and nothing inline, so the Content-Security-Policy forbids every other script.
 */
import type { Html } from "../Html.ts"
import { html, trusted } from "../Html.ts"
import { baseStyles, respond } from "../Layout.ts"
import type { Notice } from "./Notices.ts"

const styles = trusted(baseStyles)

/** The dashboards' own files (`assets/`), served by dashboard/Assets.ts. */
export const stylesheetPath = "/dashboard/assets/dashboard.css"
export const scriptPath = "/dashboard/assets/dashboard.js"

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

export type OperatorSection = "overview" | "applications" | "deliveries" | "payments" | "provider" | "users" | "audit"
export type ApplicationSection = "overview" | "keys" | "webhooks" | "deliveries" | "payments" | "members"

export interface Viewer {
  readonly email: string
  readonly operatorAdmin: boolean
  readonly csrf: string
}

const operatorLinks: ReadonlyArray<readonly [OperatorSection, string, string]> = [
  ["overview", "Overview", "/dashboard/operator"],
  ["applications", "Applications", "/dashboard/operator/applications"],
  ["deliveries", "Deliveries", "/dashboard/operator/deliveries"],
  ["payments", "Payments", "/dashboard/operator/payments"],
  ["provider", "At the provider", "/dashboard/operator/provider"],
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
  readonly notice?: Notice | undefined
}

const head = (title: string, script: boolean): Html => html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<link rel="icon" href="data:,">
<title>${title} · Kassa</title>
<style>${styles}</style>
<link rel="stylesheet" href="${stylesheetPath}">
${script ? html`<script src="${scriptPath}" defer></script>` : ""}
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

/** A dashboard page as a response (security headers, own stylesheet and script only). */
export const respondPage = (page: DashboardPage, status = 200) => respond(document(page), { status, assets: true })

/** Pages without a signed-in user (sign-in, refusals): the frame without navigation. */
export const plainDocument = (title: string, body: Html): Html => html`<!doctype html>
<html lang="en">
${head(title, false)}
<body>
<header class="top"><div class="left"><span class="logo">Kassa</span><span class="tag">Dashboard</span></div></header>
<main class="auth" id="main">${body}</main>
</body>
</html>`

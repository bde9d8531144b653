/** The landing page of a user who belongs to several applications, or none: where they may go. */
import type { DateTime } from "effect"
import { html } from "../Html.ts"
import { formatTime, table } from "./Components.ts"
import { respondPage, type Viewer } from "./DashboardLayout.ts"

export interface HomeView {
  readonly viewer: Viewer
  readonly lastLoginAt: DateTime.Utc | null
  readonly memberships: ReadonlyArray<{
    readonly applicationId: string
    readonly applicationName: string
    readonly role: string
  }>
}

export const homePage = (view: HomeView) =>
  respondPage({
    title: "Your applications",
    place: { _tag: "Home" },
    viewer: view.viewer,
    body: html`<div class="page-head"><div><h1>Your applications</h1>
<p class="muted">Signed in as ${view.viewer.email}. Last sign-in ${formatTime(view.lastLoginAt)}.</p></div></div>
${table(
  ["Application", "Your role"],
  view.memberships.map(
    (membership) =>
      html`<tr><td><a href="/dashboard/apps/${membership.applicationId}">${membership.applicationName}</a></td><td>${membership.role}</td></tr>`
  ),
  "You are not a member of any application yet. Ask an operator or an application owner to add you."
)}`
  })

/**
 * The operator's application pages (issue #6): the list with search, the new-application form and the page that
 * shows its webhook secret once, and one application's page — status actions, settings, API keys and members.
 * Templates only: every value goes through `html`, so it is escaped.
 */
import { type Application, OperatorSettings } from "@kassa/core"
import { type Html, html } from "../Html.ts"
import { type MemberForm, memberFields } from "./ApplicationMembers.ts"
import {
  actionForm,
  alert,
  anyOf,
  badge,
  deactivatedBadge,
  field,
  filterForm,
  formatTime,
  modeBadge,
  pageHead,
  secretBox,
  select,
  table,
  textArea
} from "./Components.ts"
import { csrfField, type DashboardPage, type Viewer } from "./DashboardLayout.ts"
import type { Notice } from "./Notices.ts"
import { type FieldMessages, operatorPage } from "./OperatorViews.ts"
import type { KeyView, MemberView } from "./Views.ts"

const base = "/dashboard/operator/applications"

/** The settings form as typed (the core's OperatorSettings: lists comma-separated, the allow-list one per line). */
export type SettingsValues = Readonly<Record<OperatorSettings.SettingName, string>>

type FormName = (typeof OperatorSettings.formNames)[number]
type Settings = Pick<Application.Application, FormName>

/** The form's values for stored (or default) settings. */
export const settingsValuesOf = (settings: Settings): SettingsValues =>
  Object.fromEntries(
    OperatorSettings.formNames.map((name) => [name, OperatorSettings.toForm(name, settings[name])])
  ) as SettingsValues

/** One setting's field, labelled and explained by the catalogue, typed by its input. */
const settingField = (name: FormName, values: SettingsValues, errors: FieldMessages): Html => {
  const { label, hint, input } = OperatorSettings.settings[name]
  const common = { name, label, value: values[name], error: errors[name], hint }
  if (input._tag === "List" && input.formSeparator === "line") return textArea(common)
  const type = input._tag === "Integer" ? "number" : input._tag === "OptionalText" && input.url ? "url" : "text"
  return field({ ...common, type, ...(name === "name" ? { required: true } : {}) })
}

const statusHelp: Record<Application.ApplicationStatus, string> = {
  pending_review: "Waiting for review: its API keys are refused until it is approved.",
  active: "Active: its API keys work.",
  suspended: "Suspended: its API keys are refused until it is reactivated.",
  disabled: "Disabled: switched off, its API keys are refused."
}

/**
 * The form's settings by group: a short one alone, the others side by side in a grid, the allow-list (a text area)
 * under its group's grid. Every setting of the catalogue's form appears once.
 */
const settingsGroups: ReadonlyArray<{
  readonly legend: string
  readonly grid: ReadonlyArray<FormName>
  readonly below: ReadonlyArray<FormName>
}> = [
  { legend: "Application", grid: [], below: ["name"] },
  {
    legend: "Payments",
    grid: ["methods", "currencies", "locale", "min_amount", "max_amount", "payment_ttl_seconds"],
    below: []
  },
  { legend: "Integration", grid: ["return_url_host", "webhook_url", "rate_limit_per_minute"], below: ["ip_allowlist"] },
  { legend: "Hosted checkout", grid: ["checkout_logo_url", "checkout_brand_color"], below: [] }
]

const settingsFields = (values: SettingsValues, errors: FieldMessages): Html =>
  html`${settingsGroups.map(
    ({ legend, grid, below }) => html`
<fieldset><legend>${legend}</legend>
${grid.length === 0 ? "" : html`<div class="grid">${grid.map((name) => settingField(name, values, errors))}</div>`}
${below.map((name) => settingField(name, values, errors))}
</fieldset>`
  )}`

// ---------------------------------------------------------------------------------------------------------------
// The list

export interface ApplicationItem {
  readonly id: string
  readonly name: string
  readonly status: Application.ApplicationStatus
  readonly currencies: ReadonlyArray<string>
  readonly createdAt: Date
}

export const applicationsPage = (view: {
  readonly viewer: Viewer
  readonly notice?: Notice | undefined
  readonly q: string
  readonly status: string
  readonly statuses: ReadonlyArray<string>
  readonly applications: ReadonlyArray<ApplicationItem>
  readonly total: number
}): DashboardPage => {
  const active = view.q.length > 0 || view.status.length > 0
  const rows = view.applications.map(
    (application) => html`<tr>
<td><a href="${base}/${application.id}">${application.name}</a><div class="hint"><code>${application.id}</code></div></td>
<td>${badge(application.status)}</td>
<td>${application.currencies.join(", ")}</td>
<td>${formatTime(application.createdAt)}</td>
</tr>`
  )
  return operatorPage(
    "applications",
    view.viewer,
    "Applications",
    html`${pageHead(
      "Applications",
      `Every application using this Kassa installation: ${view.total} in all. Approve new ones, change their settings, issue keys.`,
      html`<a class="button primary" href="${base}/new">New application</a>`
    )}
${filterForm(
  base,
  [
    field({ name: "q", label: "Name or id", type: "search", value: view.q }),
    select({ name: "status", label: "Status", value: view.status, choices: anyOf(view.statuses) })
  ],
  active,
  { submit: "Search" }
)}
${table(
  ["Application", "Status", "Currencies", "Created"],
  rows,
  active ? "No application matches this search." : "No applications yet. Create the first one.",
  "Applications"
)}`,
    view.notice
  )
}

// ---------------------------------------------------------------------------------------------------------------
// New application

export const newApplicationPage = (view: {
  readonly viewer: Viewer
  readonly values: SettingsValues
  readonly errors: FieldMessages
}): DashboardPage =>
  operatorPage(
    "applications",
    view.viewer,
    "New application",
    html`${pageHead("New application", "It starts as pending review: approve it on its page once you have checked it.")}
${Object.keys(view.errors).length > 0 ? alert("Some settings are not valid; see the messages next to them.") : ""}
<form class="card" method="post" action="${base}" novalidate>
${csrfField(view.viewer)}
${settingsFields(view.values, view.errors)}
<div class="actions"><button type="submit" class="primary">Create application</button><a class="button secondary" href="${base}">Cancel</a></div>
</form>`
  )

export const applicationCreatedPage = (view: {
  readonly viewer: Viewer
  readonly application: Application.Application
  readonly webhookSecret: string
}): DashboardPage =>
  operatorPage(
    "applications",
    view.viewer,
    "Application created",
    html`${pageHead("Application created", `${view.application.name} is created and waits for review.`)}
<div class="card">
<h2>Webhook signing secret</h2>
<p>Give this secret to the application's developers: their receiver checks each webhook's signature with it.
<strong>It is shown only this once</strong>; Kassa keeps it encrypted and cannot show it again.</p>
${secretBox("webhook-secret", "Webhook secret", view.webhookSecret)}
<div class="actions"><a class="button primary" href="${base}/${view.application.id}">Go to the application</a></div>
</div>`
  )

// ---------------------------------------------------------------------------------------------------------------
// One application

export interface StatusAction {
  readonly status: Application.ApplicationStatus
  readonly label: string
  readonly kind: "primary" | "danger"
}

export interface ApplicationDetail {
  readonly viewer: Viewer
  readonly notice?: Notice | undefined
  /** A refused action, shown above everything. */
  readonly problem?: string | undefined
  readonly application: Application.Application
  readonly actions: ReadonlyArray<StatusAction>
  readonly keys: ReadonlyArray<KeyView>
  readonly members: ReadonlyArray<MemberView>
  readonly settings: { readonly values: SettingsValues; readonly errors: FieldMessages }
  readonly member: MemberForm
  /** The payment provider section (OperatorProviderAccount), rendered by its own template. */
  readonly provider?: Html | undefined
}

export const applicationPage = (view: ApplicationDetail): DashboardPage => {
  const { application, viewer } = view
  const path = `${base}/${application.id}`
  const keyRows = view.keys.map(
    (key) => html`<tr>
<td><code>${key.display}</code></td>
<td>${modeBadge(key.mode)}</td>
<td>${formatTime(key.created_at)}</td>
<td>${formatTime(key.last_used_at)}</td>
<td>${key.revoked_at === null ? badge("active") : html`${badge("revoked")} <span class="hint">${formatTime(key.revoked_at)}</span>`}</td>
</tr>`
  )
  const memberRows = view.members.map(
    (member) => html`<tr>
<td>${member.user.email}${member.user.deactivatedAt === null ? "" : html` ${deactivatedBadge}`}</td>
<td>${member.role}</td>
<td><form class="inline" method="post" action="${path}/members/remove">${csrfField(viewer)}<input type="hidden" name="user_id" value="${member.user.id}"><button type="submit" class="danger small">Remove<span class="sr-only"> ${member.user.email}</span></button></form></td>
</tr>`
  )
  const settingsInvalid = Object.keys(view.settings.errors).length > 0
  return operatorPage(
    "applications",
    viewer,
    application.name,
    html`${pageHead(
      application.name,
      `Application ${application.id}, created ${formatTime(application.created_at)}.`,
      html`<a class="button secondary" href="/dashboard/apps/${application.id}">Open its dashboard</a>`
    )}
${alert(view.problem)}
${settingsInvalid ? alert("The settings were not saved: see the messages next to the fields.") : ""}
<section class="card" aria-labelledby="status-heading">
<h2 id="status-heading">Status</h2>
<p>${badge(application.status)} ${statusHelp[application.status]}</p>
<div class="actions">${view.actions.map((action) =>
      actionForm(viewer, `${path}/status`, action.label, action.kind, { status: action.status })
    )}</div>
</section>

<section class="card" aria-labelledby="settings-heading">
<h2 id="settings-heading">Settings</h2>
<form method="post" action="${path}/settings" novalidate>
${csrfField(viewer)}
${settingsFields(view.settings.values, view.settings.errors)}
<div class="actions"><button type="submit" class="primary">Save settings</button></div>
</form>
</section>
${view.provider ?? ""}

<section aria-labelledby="keys-heading">
<div class="page-head" style="margin:28px 0 10px"><h2 id="keys-heading" style="margin:0">API keys</h2>
<div class="actions" style="margin-top:0">${actionForm(viewer, `${path}/keys`, "Issue test key", "secondary", { mode: "test" })}${actionForm(viewer, `${path}/keys`, "Issue live key", "secondary", { mode: "live" })}</div></div>
${table(["Key", "Mode", "Created", "Last used", "State"], keyRows, "No API keys yet. Issue a test key to get the integration started.", "API keys")}
<p class="muted">Roll or revoke keys on the <a href="/dashboard/apps/${application.id}/keys">application's key page</a>.</p>
</section>

<section aria-labelledby="members-heading">
<h2 id="members-heading">Members</h2>
${table(["User", "Role", ""], memberRows, "No members yet: nobody of the application's team can sign in to its dashboard.", "Members")}
<form class="card" method="post" action="${path}/members" novalidate style="margin-top:12px">
${csrfField(viewer)}
<h3 style="margin:0">Add a member</h3>
<p class="muted">The user must exist (create them on the <a href="/dashboard/operator/users">Users</a> page). Adding an existing member changes their role.</p>
${memberFields(view.member)}
<div class="actions"><button type="submit" class="primary">Add member</button></div>
</form>
</section>`,
    view.notice
  )
}

export const keyIssuedPage = (view: {
  readonly viewer: Viewer
  readonly application: Application.Application
  readonly mode: string
  readonly key: string
}): DashboardPage =>
  operatorPage(
    "applications",
    view.viewer,
    "API key issued",
    html`${pageHead(`New ${view.mode} key`, `For ${view.application.name}.`)}
<div class="card">
<h2>The key</h2>
<p>Give it to the application's developers by a safe channel. <strong>It is shown only this once</strong>: Kassa
stores only a hash of it.</p>
${secretBox("api-key", `${view.mode === "live" ? "Live" : "Test"} API key`, view.key)}
<div class="actions"><a class="button primary" href="${base}/${view.application.id}">Back to the application</a></div>
</div>`
  )

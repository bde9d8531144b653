/**
 * The operator's cross-application pages (issue #6): webhook deliveries of every application, the dashboard users,
 * and the audit log (payments: OperatorPaymentList.ts); plus the pieces the operator's application pages share with
 * them (the page frame, field messages). Templates only: every value goes through `html`, so it is escaped.
 */
import { type Html, html } from "../Html.ts"
import {
  accountBadge,
  actionForm,
  alert,
  anyOf,
  badge,
  field,
  filterForm,
  formatTime,
  modeBadge,
  pageHead,
  pager,
  select,
  table
} from "./Components.ts"

import { csrfField, type DashboardPage, type OperatorSection, type Viewer } from "./DashboardLayout.ts"
import type { Notice } from "./Notices.ts"
import type { MembershipView } from "./Views.ts"

/** Messages next to form fields, by field name. */
export type FieldMessages = Readonly<Partial<Record<string, string>>>

/** The operator's page frame: its section highlighted in the navigation. */
export const operatorPage = (
  section: OperatorSection,
  viewer: Viewer,
  title: string,
  body: Html,
  notice?: Notice
): DashboardPage => ({ title, place: { _tag: "Operator", section }, viewer, body, notice })

export interface ApplicationChoice {
  readonly id: string
  readonly name: string
}

/** The application filter's choices: every application, "All applications" first. */
export const applicationChoices = (applications: ReadonlyArray<ApplicationChoice>) => [
  ["", "All applications"] as const,
  ...applications.map((application) => [application.id, application.name] as const)
]

export const operatorApplicationLink = (id: string, name: string) =>
  html`<a href="/dashboard/operator/applications/${id}">${name}</a>`

// ---------------------------------------------------------------------------------------------------------------
// Deliveries

export interface DeliveryFilters {
  readonly application: string
  readonly status: string
  readonly event: string
  readonly mode: string
}

export interface DeliveryItem {
  readonly id: string
  readonly applicationId: string
  readonly applicationName: string
  readonly event: string
  readonly paymentId: string
  readonly mode: string
  readonly status: string
  readonly attempts: number
  readonly lastResponseStatus: number | null
  readonly lastError: string | null
  readonly nextAttemptAt: Date | null
  readonly createdAt: Date
}

export const deliveriesPage = (view: {
  readonly viewer: Viewer
  readonly filters: DeliveryFilters
  readonly applications: ReadonlyArray<ApplicationChoice>
  readonly statuses: ReadonlyArray<string>
  readonly events: ReadonlyArray<string>
  readonly modes: ReadonlyArray<string>
  readonly deliveries: ReadonlyArray<DeliveryItem>
  readonly next: string | null
}): DashboardPage => {
  const { filters } = view
  const active = Object.values(filters).some((value) => value.length > 0)
  const rows = view.deliveries.map(
    (delivery) => html`<tr>
<td>${formatTime(delivery.createdAt)}</td>
<td>${operatorApplicationLink(delivery.applicationId, delivery.applicationName)}</td>
<td><a href="/dashboard/apps/${delivery.applicationId}/deliveries/${delivery.id}">${delivery.event}</a></td>
<td><a href="/dashboard/apps/${delivery.applicationId}/payments/${delivery.paymentId}"><code>${delivery.paymentId}</code></a></td>
<td>${modeBadge(delivery.mode)}</td>
<td>${badge(delivery.status)}</td>
<td class="num">${delivery.attempts}</td>
<td>${delivery.lastResponseStatus !== null ? String(delivery.lastResponseStatus) : (delivery.lastError ?? "—")}</td>
<td>${delivery.status === "pending" ? formatTime(delivery.nextAttemptAt) : "—"}</td>
</tr>`
  )
  return operatorPage(
    "deliveries",
    view.viewer,
    "Deliveries",
    html`${pageHead("Webhook deliveries", "Every application's webhook deliveries, newest first. Open one to see its attempts or send it again.")}
${filterForm(
  "/dashboard/operator/deliveries",
  [
    select({
      name: "application",
      label: "Application",
      value: filters.application,
      choices: applicationChoices(view.applications)
    }),
    select({ name: "status", label: "Status", value: filters.status, choices: anyOf(view.statuses) }),
    select({ name: "event", label: "Event", value: filters.event, choices: anyOf(view.events) }),
    select({ name: "mode", label: "Mode", value: filters.mode, choices: anyOf(view.modes) })
  ],
  active
)}
${table(
  ["Created", "Application", "Event", "Payment", "Mode", "Status", "Attempts", "Last response", "Next attempt"],
  rows,
  active ? "No deliveries match these filters." : "No webhook deliveries yet. They appear when payments change status.",
  "Webhook deliveries"
)}
${pager("/dashboard/operator/deliveries", { ...filters }, view.next)}`
  )
}

// ---------------------------------------------------------------------------------------------------------------
// Users

export interface UserItem {
  readonly id: string
  readonly email: string
  readonly operatorAdmin: boolean
  readonly lastLoginAt: Date | null
  readonly createdAt: Date
  readonly deactivatedAt: Date | null
  readonly memberships: ReadonlyArray<MembershipView>
}

export interface NewUserForm {
  readonly email: string
  readonly operatorAdmin: boolean
  readonly errors: FieldMessages
}

const usersPath = "/dashboard/operator/users"

const membershipList = (memberships: ReadonlyArray<MembershipView>): Html | ReadonlyArray<Html> =>
  memberships.length === 0
    ? html`<span class="muted">none</span>`
    : memberships.map(
        (membership) =>
          html`<div>${operatorApplicationLink(membership.applicationId, membership.applicationName)} <span class="muted">(${membership.role})</span></div>`
      )

/** One user: who they are, and what an operator admin can do for them. */
export const userPage = (view: {
  readonly viewer: Viewer
  readonly notice?: Notice | undefined
  /** A refused change, shown above everything. */
  readonly problem?: string | undefined
  readonly user: UserItem
  /** The operator admin looking at their own account: they change it on the account page. */
  readonly self: boolean
  readonly passwordError?: string | undefined
}): DashboardPage => {
  const { user, viewer } = view
  const path = `${usersPath}/${user.id}`
  const active = user.deactivatedAt === null
  return operatorPage(
    "users",
    viewer,
    user.email,
    html`${pageHead(user.email, `User ${user.id}, created ${formatTime(user.createdAt)}.`)}
${alert(view.problem)}
<section class="card" aria-labelledby="account-heading">
<h2 id="account-heading">Account</h2>
<dl class="summary">
<dt>Status</dt><dd>${accountBadge(user)}${active ? "" : html` <span class="hint">since ${formatTime(user.deactivatedAt)}</span>`}</dd>
<dt>Role</dt><dd>${user.operatorAdmin ? "Operator admin: sees and changes every application" : "Application member (see memberships)"}</dd>
<dt>Last sign-in</dt><dd>${formatTime(user.lastLoginAt)}</dd>
<dt>Memberships</dt><dd>${membershipList(user.memberships)}</dd>
</dl>
${
  view.self
    ? html`<p class="muted">This is your own account: change your password on <a href="/dashboard/account">your account page</a>.</p>`
    : html`<div class="actions">${
        active
          ? actionForm(viewer, `${path}/access`, "Deactivate", "danger", { change: "deactivate" })
          : actionForm(viewer, `${path}/access`, "Reactivate", "primary", { change: "reactivate" })
      }${
        user.operatorAdmin
          ? actionForm(viewer, `${path}/access`, "Remove operator admin", "secondary", { change: "revoke_admin" })
          : actionForm(viewer, `${path}/access`, "Make operator admin", "secondary", { change: "grant_admin" })
      }</div>
<p class="hint">Deactivating ends every session at once and refuses sign-in; memberships are kept for a reactivation.</p>`
}
</section>
${
  view.self
    ? ""
    : html`<section class="card" aria-labelledby="password-heading">
<h2 id="password-heading">Set a new password</h2>
<p class="muted">For someone who lost theirs. It clears a lock-out and ends every session of the user; give it to them by a safe channel.</p>
<form method="post" action="${path}/password" novalidate>
${csrfField(viewer)}
${field({ name: "password", label: "New password", type: "password", hint: "At least 12 characters.", error: view.passwordError, required: true, attributes: html` autocomplete="new-password"` })}
<div class="actions"><button type="submit" class="primary">Set password</button></div>
</form>
</section>`
}`,
    view.notice
  )
}

export const usersPage = (view: {
  readonly viewer: Viewer
  readonly notice?: Notice | undefined
  readonly users: ReadonlyArray<UserItem>
  readonly form: NewUserForm
}): DashboardPage => {
  const rows = view.users.map(
    (user) => html`<tr>
<td><a href="${usersPath}/${user.id}">${user.email}</a></td>
<td>${user.operatorAdmin ? badge("active", "operator admin") : "—"}</td>
<td>${accountBadge(user)}</td>
<td>${membershipList(user.memberships)}</td>
<td>${formatTime(user.lastLoginAt)}</td>
<td>${formatTime(user.createdAt)}</td>
</tr>`
  )
  const { form } = view
  return operatorPage(
    "users",
    view.viewer,
    "Users",
    html`${pageHead("Users", "Everyone who can sign in to the dashboards. Open a user to set a new password or deactivate them; add members to an application on its page.")}
${table(["E-mail address", "Role", "Account", "Memberships", "Last sign-in", "Created"], rows, "No users yet.", "Dashboard users")}
<section class="card" aria-labelledby="new-user">
<h2 id="new-user">Create a user</h2>
<p class="muted">Give the new user their password by a safe channel; they cannot change the address themselves.</p>
<form method="post" action="/dashboard/operator/users" novalidate>
${csrfField(view.viewer)}
<div class="grid">
${field({ name: "email", label: "E-mail address", type: "email", value: form.email, error: form.errors.email, required: true, attributes: html` autocomplete="off"` })}
${field({ name: "password", label: "Password", type: "password", hint: "At least 12 characters.", error: form.errors.password, required: true, attributes: html` autocomplete="new-password"` })}
</div>
<label for="field-operator_admin" class="choice"><input type="checkbox" id="field-operator_admin" name="operator_admin" value="yes"${
      form.operatorAdmin ? html` checked` : ""
    }> Operator admin: sees and changes every application, and these pages</label>
<div class="actions"><button type="submit" class="primary">Create user</button></div>
</form>
</section>`,
    view.notice
  )
}

// ---------------------------------------------------------------------------------------------------------------
// Audit log

export interface AuditFilters {
  readonly application: string
  readonly actor: string
  readonly action: string
}

export interface AuditItem {
  readonly id: number
  readonly at: Date
  readonly actor: string
  readonly action: string
  readonly applicationId: string | null
  readonly applicationName: string | null
  readonly target: string | null
  readonly details: Readonly<Record<string, unknown>>
  readonly ip: string | null
}

export const auditPage = (view: {
  readonly viewer: Viewer
  readonly filters: AuditFilters
  readonly applications: ReadonlyArray<ApplicationChoice>
  readonly actions: ReadonlyArray<string>
  readonly entries: ReadonlyArray<AuditItem>
  /** The id older entries start before, when there are any. */
  readonly before: number | null
}): DashboardPage => {
  const { filters } = view
  const active = Object.values(filters).some((value) => value.length > 0)
  const rows = view.entries.map(
    (entry) => html`<tr>
<td class="nowrap">${formatTime(entry.at)}</td>
<td>${entry.actor}</td>
<td><code>${entry.action}</code></td>
<td>${
      entry.applicationId === null
        ? "—"
        : operatorApplicationLink(entry.applicationId, entry.applicationName ?? entry.applicationId)
    }</td>
<td>${entry.target === null ? "—" : html`<code>${entry.target}</code>`}</td>
<td>${
      Object.keys(entry.details).length === 0
        ? "—"
        : html`<dl class="details">${Object.entries(entry.details).map(
            ([name, value]) =>
              html`<dt>${name}</dt><dd>${typeof value === "string" ? value : JSON.stringify(value)}</dd>`
          )}</dl>`
    }</td>
<td>${entry.ip ?? "—"}</td>
</tr>`
  )
  return operatorPage(
    "audit",
    view.viewer,
    "Audit log",
    html`${pageHead("Audit log", "Who did what, where and when, across the dashboards and the operator API. Newest first; entries are never changed.")}
${filterForm(
  "/dashboard/operator/audit",
  [
    select({
      name: "application",
      label: "Application",
      value: filters.application,
      choices: applicationChoices(view.applications)
    }),
    field({ name: "actor", label: "Actor (e-mail contains)", value: filters.actor }),
    select({
      name: "action",
      label: "Action",
      value: filters.action,
      choices: anyOf(view.actions, "Any", (action) => action)
    })
  ],
  active
)}
${table(["Time", "Actor", "Action", "Application", "Target", "Details", "Address"], rows, active ? "No entries match these filters." : "The audit log is empty.", "Audit log entries")}
${pager("/dashboard/operator/audit", { ...filters }, view.before === null ? null : String(view.before), {
  cursor: "before",
  label: "Older entries →"
})}`
  )
}

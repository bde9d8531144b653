/**
 * The signed-in user's own account page (`/dashboard/account`): who they are, what they may open, when they last
 * signed in, and the form to change their password. Templates only: every value goes through `html`, so it is
 * escaped; the password fields are never filled back in.
 */
import type { DateTime } from "effect"
import { type Html, html } from "../Html.ts"
import { alert, field, formatTime, pageHead, table } from "./Components.ts"
import { csrfField, respondPage, type Viewer } from "./DashboardLayout.ts"
import type { Notice } from "./Notices.ts"
import type { MembershipView } from "./Views.ts"

/** The change-password form's field errors, by field name (`current_password`, `new_password`, `repeat_password`). */
export type PasswordErrors = Readonly<Partial<Record<"current_password" | "new_password" | "repeat_password", string>>>

export interface AccountView {
  readonly viewer: Viewer
  readonly lastLoginAt: DateTime.Utc | null
  readonly memberships: ReadonlyArray<MembershipView>
  readonly notice?: Notice | undefined
  readonly errors?: PasswordErrors | undefined
  /** A refusal of the whole form (the account is locked), shown above it. */
  readonly problem?: string | undefined
}

const roles = (view: AccountView): Html => {
  const operator = view.viewer.operatorAdmin
    ? html`<p>You are an <strong>operator admin</strong>: you can open every application and the operator's pages.</p>`
    : ""
  const list = table(
    ["Application", "Your role"],
    view.memberships.map(
      (membership) =>
        html`<tr><td><a href="/dashboard/apps/${membership.applicationId}">${membership.applicationName}</a></td><td>${membership.role}</td></tr>`
    ),
    view.viewer.operatorAdmin
      ? "You are not a member of any application; as an operator admin you can open them all."
      : "You are not a member of any application yet. Ask an operator or an application owner to add you.",
    "Your applications and roles"
  )
  return html`<h2>Your roles</h2>${operator}${list}`
}

const passwordForm = (view: AccountView): Html => {
  const errors = view.errors ?? {}
  return html`<div class="card" style="margin-top:18px">
<h2 id="change-password">Change password</h2>
<p class="muted">Changing it signs out every other browser signed in to this account. Five wrong current passwords
lock the account for a while, as at sign-in.</p>
${alert(view.problem)}
<form method="post" action="/dashboard/account/password" aria-labelledby="change-password">${csrfField(view.viewer)}
<input type="text" name="username" autocomplete="username" value="${view.viewer.email}" hidden>
${field({
  name: "current_password",
  label: "Current password",
  type: "password",
  required: true,
  error: errors.current_password,
  attributes: html` autocomplete="current-password"`
})}
${field({
  name: "new_password",
  label: "New password",
  type: "password",
  required: true,
  hint: "At least 12 characters, at most 200. A few unrelated words make a good one.",
  error: errors.new_password,
  attributes: html` autocomplete="new-password" minlength="12" maxlength="200"`
})}
${field({
  name: "repeat_password",
  label: "Repeat the new password",
  type: "password",
  required: true,
  error: errors.repeat_password,
  attributes: html` autocomplete="new-password" maxlength="200"`
})}
<div class="actions"><button type="submit" class="primary">Change password</button></div>
</form>
</div>`
}

export const accountPage = (view: AccountView, status = 200) =>
  respondPage(
    {
      title: "Your account",
      place: { _tag: "Account" },
      viewer: view.viewer,
      notice: view.notice,
      body: html`${pageHead(
        "Your account",
        html`Signed in as <strong>${view.viewer.email}</strong>. Last sign-in ${formatTime(view.lastLoginAt)}.`
      )}
${roles(view)}
${passwordForm(view)}`
    },
    status
  )

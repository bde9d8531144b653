/**
 * An application's members page (issue #6): who can open the application's dashboard, with which role and what
 * that role may do; for those who may manage members (owners, operator admins) the forms to add an existing user,
 * change a role and remove a member (after asking). The add-member fields are shared with the operator's
 * application page. Templates only: every value goes through `html`, so it is escaped.
 */
import { DashboardAccess } from "@kassa/core"
import { type Html, html } from "../Html.ts"
import { type AppFrame, appPage, appPath, confirmCard, noticeBlock } from "./ApplicationShared.ts"
import { alert, deactivatedBadge, field, linkButton, pageHead, select, table } from "./Components.ts"
import { csrfField } from "./DashboardLayout.ts"
import type { MemberView } from "./Views.ts"

/** The add-member form as typed, with its field errors (`email`, `role`). */
export interface MemberForm {
  readonly email: string
  readonly role: string
  readonly errors: Readonly<Record<string, string>>
}

export const emptyMemberForm: MemberForm = { email: "", role: "developer", errors: {} }

const roleChoices = DashboardAccess.Role.literals.map((role) => [role, role] as const)

/** The add-member form's fields: the user's e-mail address and the role, each labelled, with its error. */
export const memberFields = (form: MemberForm): Html => html`<div class="grid">
${field({ name: "email", label: "E-mail address", type: "email", value: form.email, error: form.errors.email, required: true })}
<div>${select({ name: "role", label: "Role", value: form.role, choices: roleChoices })}${
  form.errors.role === undefined ? "" : html`<div class="error">${form.errors.role}</div>`
}</div>
</div>`

/** What a role may do, in words ("view, manage keys, …"). */
export const roleAbilities = (role: DashboardAccess.Role): string =>
  DashboardAccess.permissionsOf(role).join(", ").replace(/_/g, " ")

const roleHelp: Record<DashboardAccess.Role, string> = {
  owner: "Everything, including adding, changing and removing members.",
  developer:
    "API keys, webhooks, resending deliveries, requesting refunds, and simulating, cancelling and refunding test payments; not members.",
  viewer: "Reads every page; changes nothing."
}

export interface MembersView {
  readonly members: ReadonlyArray<MemberView>
  readonly notice: string | null
  /** A refused change (the last owner), shown above the list. */
  readonly problem?: string | undefined
  readonly form?: MemberForm | undefined
}

const memberRow = (frame: AppFrame, member: MemberView, manage: boolean): Html => {
  const { user } = member
  const you = user.email === frame.viewer.email ? html` <span class="muted">(you)</span>` : ""
  const gone = user.deactivatedAt === null ? "" : html` ${deactivatedBadge}`
  const actions = manage
    ? html`<td><form class="inline" method="post" action="${appPath(frame, `/members/${user.id}/role`)}">${csrfField(frame.viewer)}
<label class="sr-only" for="role-${user.id}">Role of ${user.email}</label>
<select id="role-${user.id}" name="role" style="width:auto">${roleChoices.map(
        ([value, label]) =>
          html`<option value="${value}"${value === member.role ? html` selected` : ""}>${label}</option>`
      )}</select>
<button type="submit" class="secondary small">Change role<span class="sr-only"> of ${user.email}</span></button></form>
${linkButton(appPath(frame, `/members/${user.id}/remove`), html`Remove<span class="sr-only"> ${user.email}</span>`)}</td>`
    : ""
  return html`<tr><td>${user.email}${you}${gone}</td><td>${member.role}</td><td class="muted">${roleAbilities(member.role)}</td>${actions}</tr>`
}

/** The members in a table: e-mail address, role and what it may do, and for `manage` the actions on each. */
export const membersTable = (frame: AppFrame, members: ReadonlyArray<MemberView>, manage = false): Html =>
  table(
    ["E-mail address", "Role", "May", ...(manage ? ["Actions"] : [])],
    members.map((member) => memberRow(frame, member, manage)),
    "No members yet. An operator adds them.",
    "Members of this application"
  )

export const membersPage = (frame: AppFrame, view: MembersView, status = 200) => {
  const manage = frame.can("manage_members")
  const form = view.form ?? emptyMemberForm
  const invalid = Object.keys(form.errors).length > 0
  const body = html`${pageHead(
    "Members",
    manage
      ? "Who can open this application's dashboard, and what their role lets them do. An application always keeps at least one owner."
      : "Who can open this application's dashboard, and what their role lets them do. Its owners manage this list."
  )}
${noticeBlock(view.notice)}
${alert(view.problem, "margin:0 0 18px")}
${membersTable(frame, view.members, manage)}
${
  manage
    ? html`<div class="card" style="margin-top:18px">
<h2>Add a member</h2>
<p class="muted">${
        frame.viewer.operatorAdmin
          ? "Any Kassa user; the operator of this installation creates users. Adding someone who is a member already changes their role."
          : "A Kassa user who is a member of another application you belong to; anyone else is added by the operator of this installation. Adding someone who is a member already changes their role."
      }</p>
${invalid ? alert("The member was not added: see the messages next to the fields.") : ""}
<form method="post" action="${appPath(frame, "/members")}" novalidate>${csrfField(frame.viewer)}
${memberFields(form)}
<div class="actions"><button type="submit" class="primary">Add member</button></div>
</form>
</div>`
    : ""
}
<div class="card" style="margin-top:18px">
<h2>Roles</h2>
<dl class="summary">${DashboardAccess.Role.literals.map(
    (role) => html`<dt>${role}</dt><dd>${roleHelp[role]} <span class="hint">(${roleAbilities(role)})</span></dd>`
  )}</dl>
</div>`
  return appPage(frame, "members", "Members", body, status)
}

/** "Are you sure?" before removing a member. */
export const confirmRemovalPage = (frame: AppFrame, member: MemberView) => {
  const self = member.user.email === frame.viewer.email
  const details = html`<dl class="summary" style="margin-top:0"><dt>MemberView</dt><dd>${member.user.email}</dd><dt>Role</dt><dd>${member.role}</dd></dl>`
  const body = html`${pageHead(
    self ? "Leave this application?" : "Remove this member?",
    "Their Kassa user stays; an owner can add them again later."
  )}
${confirmCard({
  frame,
  details,
  consequence: self
    ? html`You can no longer open this application's dashboard afterwards.`
    : html`${member.user.email} can no longer open this application's dashboard, from their next page on.`,
  action: appPath(frame, `/members/${member.user.id}/remove`),
  button: self ? "Leave application" : "Remove member",
  back: appPath(frame, "/members")
})}`
  return appPage(frame, "members", "Remove member", body)
}

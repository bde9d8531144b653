/**
 * The dashboard's users (`/dashboard/operator/users`): the list with a create form, one user with a new password
 * (for someone who lost theirs) and the account changes (deactivate, reactivate, operator admin or not). An operator
 * admin changes their own account on the account page, never here. Templates: `usersPage`, `userPage` in
 * pages/dashboard/OperatorViews.ts.
 */
import { OperatorSchemas, RequestValidation } from "@kassa/core"
import { Effect, Option, Result } from "effect"
import { HttpRouter, UrlParams } from "effect/http"
import { AuditLog } from "../../audit/AuditLog.ts"
import { toDate } from "../../database/Columns.ts"
import { respondPage } from "../../pages/dashboard/DashboardLayout.ts"
import { notFoundPage } from "../../pages/dashboard/MessagePages.ts"
import { type FieldMessages, type UserItem, userPage, usersPage } from "../../pages/dashboard/OperatorViews.ts"
import { parseUserId, type User, type UserChanges, UserRepository } from "../../users/UserRepository.ts"
import { PostedForm, type Response, redirect, route, SignedIn } from "../DashboardRoute.ts"
import { collectErrors, joined, notice, toDateOrNull } from "./OperatorFrame.ts"

const usersPath = "/dashboard/operator/users"

/** The account changes the user page offers: what the repository is asked, what is audited, which notice shows. */
const accessChanges = {
  deactivate: { changes: { active: false }, action: "user.deactivated", notice: "deactivated" },
  reactivate: { changes: { active: true }, action: "user.reactivated", notice: "user_reactivated" },
  grant_admin: { changes: { operatorAdmin: true }, action: "user.operator_admin_granted", notice: "admin_granted" },
  revoke_admin: { changes: { operatorAdmin: false }, action: "user.operator_admin_revoked", notice: "admin_revoked" }
} as const satisfies Record<string, { changes: UserChanges; action: string; notice: string }>

/** Their own account is changed on the account page, which asks for the current password. */
const ownAccount = "This is your own account: change it on your account page."

const userItem = (user: User, memberships: UserItem["memberships"]): UserItem => ({
  id: user.id,
  email: user.email,
  operatorAdmin: user.operatorAdmin,
  lastLoginAt: toDateOrNull(user.lastLoginAt),
  createdAt: toDate(user.createdAt),
  deactivatedAt: toDateOrNull(user.deactivatedAt),
  memberships
})

const showUsers = Effect.fn("OperatorUsers.list")(function* (
  form: { readonly email: string; readonly operatorAdmin: boolean; readonly errors: FieldMessages },
  status = 200
) {
  const all = yield* (yield* UserRepository).listWithMemberships
  return respondPage(
    usersPage({
      viewer: (yield* SignedIn).viewer,
      notice: yield* notice,
      form,
      users: all.map(({ user, memberships }) => userItem(user, memberships))
    }),
    status
  )
})

const showUser = Effect.fn("OperatorUsers.user")(function* (
  user: User,
  refused: { readonly problem?: string; readonly passwordError?: string } = {},
  status = 200
) {
  const signed = yield* SignedIn
  const memberships = yield* (yield* UserRepository).memberships(user.id)
  return respondPage(
    userPage({
      viewer: signed.viewer,
      notice: yield* notice,
      user: userItem(user, memberships),
      self: user.id === signed.session.user.id,
      ...refused
    }),
    status
  )
})

/** Runs `f` with the user of the path (404 when there is none). */
const withUser = <R>(f: (user: User) => Effect.Effect<Response, never, R>) =>
  Effect.gen(function* () {
    const id = parseUserId((yield* HttpRouter.params).id ?? "")
    if (Option.isNone(id)) return notFoundPage()
    const found = yield* (yield* UserRepository).find(id.value)
    if (Option.isNone(found)) return notFoundPage()
    return yield* f(found.value)
  })

const setPassword = withUser((user) =>
  Effect.gen(function* () {
    const signed = yield* SignedIn
    if (user.id === signed.session.user.id) return yield* showUser(user, { problem: ownAccount }, 422)
    // The password as typed: spaces count (the policy is length only).
    const password = Option.getOrElse(UrlParams.getFirst((yield* PostedForm).form, "password"), () => "")
    const decoded = RequestValidation.validate(OperatorSchemas.UpdateUserBody)({ password })
    if (Result.isFailure(decoded) || decoded.success.password === undefined) {
      const errors = Result.isFailure(decoded) ? joined(collectErrors({}, decoded.failure.fields, {})) : {}
      return yield* showUser(user, { passwordError: errors.password ?? "Enter a password." }, 422)
    }
    yield* (yield* UserRepository).update(user.id, { password: decoded.success.password })
    yield* (yield* AuditLog).record(signed.actor, {
      action: "user.password_set",
      target: user.id,
      details: { email: user.email }
    })
    return redirect(`${usersPath}/${user.id}`, "password_set")
  })
)

const changeAccess = withUser((user) =>
  Effect.gen(function* () {
    const signed = yield* SignedIn
    const wanted = (yield* PostedForm).value("change")
    if (!Object.hasOwn(accessChanges, wanted))
      return yield* showUser(user, { problem: "Choose one of the buttons." }, 422)
    const change = accessChanges[wanted as keyof typeof accessChanges]
    // An operator admin cannot lock themselves out (and so leave an installation without one).
    if (user.id === signed.session.user.id) return yield* showUser(user, { problem: ownAccount }, 422)
    yield* (yield* UserRepository).update(user.id, change.changes)
    yield* (yield* AuditLog).record(signed.actor, {
      action: change.action,
      target: user.id,
      details: { email: user.email }
    })
    return redirect(`${usersPath}/${user.id}`, change.notice)
  })
)

const create = Effect.gen(function* () {
  const form = yield* PostedForm
  const email = form.value("email").slice(0, 300)
  const operatorAdmin = form.value("operator_admin").length > 0
  // The password as typed: spaces count (the policy is length only).
  const password = Option.getOrElse(UrlParams.getFirst(form.form, "password"), () => "")
  const decoded = RequestValidation.validate(OperatorSchemas.CreateUserBody)({
    email,
    password,
    operator_admin: operatorAdmin
  })
  if (Result.isFailure(decoded))
    return yield* showUsers(
      { email, operatorAdmin, errors: joined(collectErrors({}, decoded.failure.fields, {})) },
      422
    )
  const created = yield* (yield* UserRepository)
    .create({ email: decoded.success.email, password: decoded.success.password, operatorAdmin })
    .pipe(Effect.option)
  if (Option.isNone(created))
    return yield* showUsers({ email, operatorAdmin, errors: { email: "A user with this e-mail address exists." } }, 422)
  yield* (yield* AuditLog).record((yield* SignedIn).actor, {
    action: "user.created",
    target: created.value.id,
    details: { email: created.value.email, operator_admin: created.value.operatorAdmin }
  })
  return redirect(usersPath, "user_created")
})

export const routes = [
  route("GET", usersPath, "operator", showUsers({ email: "", operatorAdmin: false, errors: {} })),
  route("POST", usersPath, "operator", create),
  route(
    "GET",
    `${usersPath}/:id`,
    "operator",
    withUser((user) => showUser(user))
  ),
  route("POST", `${usersPath}/:id/password`, "operator", setPassword),
  route("POST", `${usersPath}/:id/access`, "operator", changeAccess)
] as const

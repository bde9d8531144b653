/**
 * The signed-in user's own account: `/dashboard/account` and its change-password form. The current password is
 * checked with `UserRepository.signIn` under the user's own e-mail address and the client's address, so it counts
 * towards the same throttle as sign-in: five wrong current passwords block that pair (a stolen session cannot guess
 * the password here without limit). A change ends every session of the user and starts a fresh one for this browser.
 * Template: pages/dashboard/AccountPage.ts.
 */
import { Credentials } from "@kassa/core"
import { DateTime, Effect, Option, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { AuditLog } from "../audit/AuditLog.ts"
import { accountPage, type PasswordErrors } from "../pages/dashboard/AccountPage.ts"
import { formatTime } from "../pages/dashboard/Components.ts"
import { type Notice, noticeOf } from "../pages/dashboard/Notices.ts"
import { SessionStore } from "../users/SessionStore.ts"
import { UserRepository } from "../users/UserRepository.ts"
import { PostedForm, redirect, route, SignedIn } from "./DashboardRoute.ts"
import { secondsUntil, withSessionCookie } from "./SignIn.ts"

const isPassword = (value: string): boolean => Schema.is(Credentials.Password)(value)

const show = Effect.fn("DashboardAccount.show")(function* (
  extra: {
    readonly errors?: PasswordErrors
    readonly problem?: string
    readonly notice?: Notice | undefined
  } = {},
  status = 200
) {
  const signed = yield* SignedIn
  const memberships = yield* (yield* UserRepository).memberships(signed.session.user.id)
  return accountPage(
    { viewer: signed.viewer, lastLoginAt: signed.session.user.lastLoginAt, memberships, ...extra },
    status
  )
})

const account = Effect.gen(function* () {
  const signed = yield* SignedIn
  const response = yield* show({ notice: noticeOf(signed.query.get("notice")) })
  return HttpServerResponse.setHeader(response, "cache-control", "no-store")
})

const changePassword = Effect.gen(function* () {
  const signed = yield* SignedIn
  const posted = yield* PostedForm
  const users = yield* UserRepository
  const audit = yield* AuditLog
  // Passwords as typed: spaces count (the policy is length only), so no trimming.
  const raw = (name: string) => Option.getOrElse(UrlParams.getFirst(posted.form, name), () => "")
  const current = raw("current_password")
  const next = raw("new_password")
  const repeat = raw("repeat_password")
  // The new password's own rules first: they need no secret, so a form refused for them checks (and counts) no
  // current password.
  const errors: { -readonly [K in keyof PasswordErrors]: PasswordErrors[K] } = {}
  if (current.length === 0) errors.current_password = "Enter your current password."
  if (!isPassword(next))
    errors.new_password =
      next.length < 12
        ? "The new password must be at least 12 characters."
        : "The new password must be at most 200 characters."
  else if (current.length > 0 && next === current)
    errors.new_password = "The new password must differ from the current one."
  if (repeat !== next) errors.repeat_password = "This does not match the new password."
  if (Object.keys(errors).length > 0) return yield* show({ errors }, 422)

  const user = signed.session.user
  // The same throttle as sign-in: this is a sign-in attempt with the user's own e-mail address, so five wrong current
  // passwords from here block it (the right one is refused too until the block ends).
  const checked = yield* users.signIn(user.email, current, signed.actor.ip)
  if (checked._tag === "Busy")
    return HttpServerResponse.setHeader(
      yield* show(
        { problem: "Too many passwords are being checked right now. Try again in a few seconds." },
        checked.scope === "server" ? 503 : 429
      ),
      "retry-after",
      String(checked.retryAfterSeconds)
    )
  if (checked._tag !== "SignedIn") {
    const locked = checked._tag === "Locked"
    if (!locked || checked.started)
      yield* audit.record(signed.actor, {
        action: "user.password_change_refused",
        target: user.id,
        details: { reason: locked ? "locked" : "wrong_current_password" }
      })
    return locked
      ? HttpServerResponse.setHeader(
          yield* show(
            {
              problem: `Too many wrong passwords from your address. Checking this account's password from here is locked until ${formatTime(checked.until)}; the password is not changed.`
            },
            429
          ),
          "retry-after",
          String(secondsUntil(checked.until, yield* DateTime.now))
        )
      : yield* show({ errors: { current_password: "This is not your current password." } }, 422)
  }

  // One transaction sets the password and ends every session of the user (another browser, a stolen cookie); this
  // browser gets a fresh session, so it stays signed in with a token that never met the old password.
  yield* users.update(user.id, { password: next })
  const request = yield* HttpServerRequest.HttpServerRequest
  const token = yield* (yield* SessionStore).create(user.id, {
    ip: signed.actor.ip,
    userAgent: request.headers["user-agent"] ?? null
  })
  yield* audit.record(signed.actor, { action: "user.password_changed", target: user.id })
  return yield* withSessionCookie(token, redirect("/dashboard/account", "password_changed"))
})

export const routes = [
  route("GET", "/dashboard/account", "signed_in", account),
  route("POST", "/dashboard/account/password", "signed_in", changePassword)
] as const

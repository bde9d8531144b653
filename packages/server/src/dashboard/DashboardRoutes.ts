/**
 * The dashboards under `/dashboard` (issue #6): sign-in, sign-out, the landing page, the copy-button script, and the
 * operator's and applications' pages (OperatorPages, ApplicationPages), and the signed-in user's own account page
 * (`/dashboard/account`: roles, last sign-in, change password). Sign-in is protected like the checkout form (a nonce
 * cookie and an HMAC token, plus same-origin headers), so no other site can sign a browser in to an account of its
 * choosing.
 */
import { Credentials, SignInRedirect } from "@kassa/core"
import { DateTime, Effect, Layer, Option, Schema } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { AuditLog } from "../audit/AuditLog.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { accountPage, noticeOf, type PasswordErrors } from "../pages/dashboard/AccountPage.ts"
import { formatTime, table } from "../pages/dashboard/Components.ts"
import { respondPage, script } from "../pages/dashboard/DashboardLayout.ts"
import { loginPage } from "../pages/dashboard/LoginPage.ts"
import { html } from "../pages/Html.ts"
import { respond } from "../pages/Layout.ts"
import * as CsrfToken from "../security/CsrfToken.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"
import { cookieName, SessionStore } from "../users/SessionStore.ts"
import { UserRepository } from "../users/UserRepository.ts"
import * as ApplicationPages from "./ApplicationPages.ts"
import { DashboardGuard, forgedPage, type Signed } from "./DashboardGuard.ts"
import * as OperatorPages from "./OperatorPages.ts"

const loginCookie = "kassa_login"
const loginPurpose = "dashboard-login"

/** The options of every dashboard cookie: not readable by scripts, sent only to `/dashboard`, Secure in production. */
const cookieOptionsOf = (secure: boolean) => ({ httpOnly: true, sameSite: "lax", secure, path: "/dashboard" }) as const

/**
 * Hands a browser the cookie of a session it just started — at sign-in, and after a password change (which ends every
 * session of the user, this browser's too) — so both set it alike.
 */
const withSessionCookie =
  (token: string, secure: boolean) =>
  (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse =>
    HttpServerResponse.setCookieUnsafe(response, cookieName, token, { ...cookieOptionsOf(secure), maxAge: "12 hours" })

const isPassword = (value: string): boolean => Schema.is(Credentials.Password)(value)

/**
 * Only a dashboard path of this server may be the place to go after signing in (no open redirect), normalised so it
 * is always a valid `Location` (the core's SignInRedirect).
 */
export const safeNext = SignInRedirect.nextPath

/** Whole seconds from `now` until `until`, at least 1 (a `Retry-After`). */
const secondsUntil = (until: DateTime.Utc, now: DateTime.Utc) =>
  Math.max(1, Math.ceil((DateTime.toEpochMillis(until) - DateTime.toEpochMillis(now)) / 1000))

export const routes = [
  { method: "GET", path: "/dashboard" },
  { method: "GET", path: "/dashboard/login" },
  { method: "POST", path: "/dashboard/login" },
  { method: "POST", path: "/dashboard/logout" },
  { method: "GET", path: "/dashboard/assets/dashboard.js" },
  { method: "GET", path: "/dashboard/account" },
  { method: "POST", path: "/dashboard/account/password" },
  ...OperatorPages.routes,
  ...ApplicationPages.routes
] as const

const Core = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    const { csrfKey } = yield* ServerSecrets
    const guard = yield* DashboardGuard
    const sessions = yield* SessionStore
    const users = yield* UserRepository
    const audit = yield* AuditLog
    const secure = config.environment === "production"

    const cookieOptions = cookieOptionsOf(secure)

    const showLogin = (
      request: HttpServerRequest.HttpServerRequest,
      view: { next: string; email?: string; error?: string; notice?: string },
      status = 200
    ) => {
      const nonce = CsrfToken.nonceOf(request.cookies[loginCookie])
      return HttpServerResponse.setCookieUnsafe(
        respond(loginPage({ ...view, csrf: CsrfToken.token(csrfKey, nonce, loginPurpose) }), { status }),
        loginCookie,
        nonce,
        { ...cookieOptions, sameSite: "strict" }
      )
    }

    const loginForm = Effect.fn("Dashboard.loginForm")(function* (request: HttpServerRequest.HttpServerRequest) {
      const query = new URL(request.url, config.baseUrl).searchParams
      const current = yield* sessions.resolve(request.cookies[cookieName])
      if (Option.isSome(current)) return HttpServerResponse.redirect(safeNext(query.get("next")), { status: 303 })
      return showLogin(request, {
        next: safeNext(query.get("next")),
        ...(query.get("signed_out") === "1" ? { notice: "You are signed out." } : {})
      })
    })

    const login = Effect.fn("Dashboard.login")(function* (request: HttpServerRequest.HttpServerRequest) {
      const form = new URLSearchParams(yield* request.text.pipe(Effect.orElseSucceed(() => "")))
      const email = (form.get("email") ?? "").trim().slice(0, 254)
      const next = safeNext(form.get("next"))
      if (
        !guard.sameOrigin(request) ||
        !CsrfToken.verify(csrfKey, request.cookies[loginCookie], loginPurpose, form.get("csrf") ?? undefined)
      )
        return forgedPage()
      const ip = guard.clientIp(request)
      const outcome = yield* users.signIn(email, form.get("password") ?? "", ip)
      switch (outcome._tag) {
        case "SignedIn":
          break
        case "Busy":
          // Refused unchecked; not recorded (a flood of these would write to the database for free).
          return HttpServerResponse.setHeader(
            showLogin(
              request,
              {
                next,
                email,
                error:
                  outcome.scope === "server"
                    ? "Kassa is checking many sign-ins right now. Try again in a few seconds."
                    : "Another sign-in from your address is being checked. Try again in a moment."
              },
              outcome.scope === "server" ? 503 : 429
            ),
            "retry-after",
            String(outcome.retryAfterSeconds)
          )
        case "Locked":
        case "Refused": {
          // Only checked attempts are recorded; one refused unchecked during a block cost nothing and says nothing.
          if (outcome._tag === "Refused" || outcome.started)
            yield* audit.record(
              { label: email.length > 0 ? email : "(no e-mail)", userId: outcome.userId, ip },
              { action: outcome._tag === "Locked" ? "user.sign_in_locked" : "user.sign_in_failed" }
            )
          if (outcome._tag === "Refused")
            return showLogin(request, { next, email, error: "The e-mail address or password is not right." }, 401)
          // The same words whether the e-mail address has an account or not.
          return HttpServerResponse.setHeader(
            showLogin(
              request,
              {
                next,
                email,
                error: `Too many failed sign-ins from your address. Signing in with this e-mail address from here is locked until ${formatTime(outcome.until)}.`
              },
              429
            ),
            "retry-after",
            String(secondsUntil(outcome.until, yield* DateTime.now))
          )
        }
      }
      const token = yield* sessions.create(outcome.user.id, {
        ip,
        userAgent: request.headers["user-agent"] ?? null
      })
      yield* audit.record({ label: outcome.user.email, userId: outcome.user.id, ip }, { action: "user.signed_in" })
      return HttpServerResponse.redirect(next, { status: 303, headers: { "cache-control": "no-store" } }).pipe(
        withSessionCookie(token, secure),
        HttpServerResponse.expireCookieUnsafe(loginCookie, cookieOptions)
      )
    })

    const logout = (request: HttpServerRequest.HttpServerRequest) =>
      guard.signedIn(request, (signed) =>
        guard.form(signed, () =>
          Effect.gen(function* () {
            yield* sessions.end(request.cookies[cookieName])
            yield* audit.record(signed.actor, { action: "user.signed_out" })
            return HttpServerResponse.redirect("/dashboard/login?signed_out=1", { status: 303 }).pipe(
              HttpServerResponse.expireCookieUnsafe(cookieName, cookieOptions)
            )
          })
        )
      )

    const home = (request: HttpServerRequest.HttpServerRequest) =>
      guard.signedIn(request, (signed) =>
        Effect.gen(function* () {
          if (signed.session.user.operatorAdmin)
            return HttpServerResponse.redirect("/dashboard/operator/applications", { status: 303 })
          const memberships = yield* users.memberships(signed.session.user.id)
          const [only] = memberships
          if (memberships.length === 1 && only !== undefined)
            return HttpServerResponse.redirect(`/dashboard/apps/${only.applicationId}`, { status: 303 })
          return respondPage({
            title: "Your applications",
            place: { _tag: "Home" },
            viewer: signed.viewer,
            body: html`<div class="page-head"><div><h1>Your applications</h1>
<p class="muted">Signed in as ${signed.viewer.email}. Last sign-in ${formatTime(signed.session.user.lastLoginAt)}.</p></div></div>
${table(
  ["Application", "Your role"],
  memberships.map(
    (membership) =>
      html`<tr><td><a href="/dashboard/apps/${membership.applicationId}">${membership.applicationName}</a></td><td>${membership.role}</td></tr>`
  ),
  "You are not a member of any application yet. Ask an operator or an application owner to add you."
)}`
          })
        })
      )

    return Layer.mergeAll(
      HttpRouter.add("GET", "/dashboard", home),
      HttpRouter.add("GET", "/dashboard/login", loginForm),
      HttpRouter.add("POST", "/dashboard/login", login),
      HttpRouter.add("POST", "/dashboard/logout", logout),
      HttpRouter.add("GET", "/dashboard/assets/dashboard.js", () =>
        Effect.succeed(
          HttpServerResponse.text(script, {
            contentType: "text/javascript; charset=utf-8",
            headers: { "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff" }
          })
        )
      )
    )
  })
)

/**
 * The signed-in user's own account: `/dashboard/account` and its change-password form. The current password is
 * checked with `UserRepository.signIn` under the user's own e-mail address and the client's address, so it counts
 * towards the same throttle as sign-in: five wrong current passwords block that pair (a stolen session cannot guess
 * the password here without limit). A change ends every session of the user and starts a fresh one for this browser.
 */
const Account = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* ServerConfig
    const guard = yield* DashboardGuard
    const sessions = yield* SessionStore
    const users = yield* UserRepository
    const audit = yield* AuditLog
    const secure = config.environment === "production"

    const show = Effect.fn("Dashboard.account")(function* (
      signed: Signed,
      extra: {
        readonly errors?: PasswordErrors
        readonly problem?: string
        readonly notice?: string | undefined
      } = {},
      status = 200
    ) {
      const memberships = yield* users.memberships(signed.session.user.id)
      return accountPage(
        { viewer: signed.viewer, lastLoginAt: signed.session.user.lastLoginAt, memberships, ...extra },
        status
      )
    })

    const account = (request: HttpServerRequest.HttpServerRequest) =>
      guard.signedIn(request, (signed) =>
        Effect.map(show(signed, { notice: noticeOf(signed.query.get("notice")) }), (response) =>
          HttpServerResponse.setHeader(response, "cache-control", "no-store")
        )
      )

    const changePassword = (request: HttpServerRequest.HttpServerRequest) =>
      guard.signedIn(request, (signed) =>
        guard.form(signed, (posted) =>
          Effect.gen(function* () {
            // Passwords as typed: spaces count (the policy is length only), so no trimming.
            const raw = (name: string) => Option.getOrElse(UrlParams.getFirst(posted.form, name), () => "")
            const current = raw("current_password")
            const next = raw("new_password")
            const repeat = raw("repeat_password")
            // The new password's own rules first: they need no secret, so a form refused for them checks (and
            // counts) no current password.
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
            if (Object.keys(errors).length > 0) return yield* show(signed, { errors }, 422)

            const user = signed.session.user
            // The same throttle as sign-in: this is a sign-in attempt with the user's own e-mail address, so five
            // wrong current passwords from here block it (the right one is refused too until the block ends).
            const checked = yield* users.signIn(user.email, current, signed.actor.ip)
            if (checked._tag === "Busy")
              return HttpServerResponse.setHeader(
                yield* show(
                  signed,
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
                      signed,
                      {
                        problem: `Too many wrong passwords from your address. Checking this account's password from here is locked until ${formatTime(checked.until)}; the password is not changed.`
                      },
                      429
                    ),
                    "retry-after",
                    String(secondsUntil(checked.until, yield* DateTime.now))
                  )
                : yield* show(signed, { errors: { current_password: "This is not your current password." } }, 422)
            }

            // One transaction sets the password and ends every session of the user (another browser, a stolen
            // cookie); this browser gets a fresh session, so it stays signed in with a token that never met the old
            // password.
            yield* users.update(user.id, { password: next })
            const token = yield* sessions.create(user.id, {
              ip: signed.actor.ip,
              userAgent: request.headers["user-agent"] ?? null
            })
            yield* audit.record(signed.actor, { action: "user.password_changed", target: user.id })
            return HttpServerResponse.redirect("/dashboard/account?notice=password_changed", {
              status: 303,
              headers: { "cache-control": "no-store" }
            }).pipe(withSessionCookie(token, secure))
          })
        )
      )

    return Layer.mergeAll(
      HttpRouter.add("GET", "/dashboard/account", account),
      HttpRouter.add("POST", "/dashboard/account/password", changePassword)
    )
  })
)

export const layer = Layer.mergeAll(Core, Account, OperatorPages.layer, ApplicationPages.layer)

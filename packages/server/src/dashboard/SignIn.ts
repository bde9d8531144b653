/**
 * Signing in and out of the dashboards (`/dashboard/login`, `/dashboard/logout`). Sign-in is protected like the
 * checkout form (a nonce cookie and an HMAC token, plus same-origin headers), so no other site can sign a browser in
 * to an account of its choosing; attempts go through the sign-in throttle (UserRepository.signIn, the core's
 * LoginThrottle) and the audit log. Template: pages/dashboard/LoginPage.ts.
 */
import { SignInRedirect } from "@kassa/core"
import { DateTime, Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { AuditLog } from "../audit/AuditLog.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { formatTime } from "../pages/dashboard/Components.ts"
import { loginPage } from "../pages/dashboard/LoginPage.ts"
import { forgedPage } from "../pages/dashboard/MessagePages.ts"
import { respond } from "../pages/Layout.ts"
import * as CsrfToken from "../security/CsrfToken.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"
import { cookieName, SessionStore } from "../users/SessionStore.ts"
import { UserRepository } from "../users/UserRepository.ts"
import { DashboardGuard } from "./DashboardGuard.ts"
import { redirect, route, SignedIn } from "./DashboardRoute.ts"

const loginCookie = "kassa_login"
const loginPurpose = "dashboard-login"

/** The options of every dashboard cookie: not readable by scripts, sent only to `/dashboard`, Secure in production. */
const cookieOptions = ServerConfig.useSync(
  (config) =>
    ({ httpOnly: true, sameSite: "lax", secure: config.environment === "production", path: "/dashboard" }) as const
)

/**
 * Hands a browser the cookie of a session it just started — at sign-in, and after a password change (which ends every
 * session of the user, this browser's too) — so both set it alike.
 */
export const withSessionCookie = (token: string, response: HttpServerResponse.HttpServerResponse) =>
  Effect.map(cookieOptions, (options) =>
    HttpServerResponse.setCookieUnsafe(response, cookieName, token, { ...options, maxAge: "12 hours" })
  )

/**
 * Only a dashboard path of this server may be the place to go after signing in (no open redirect), normalised so it
 * is always a valid `Location` (the core's SignInRedirect).
 */
export const safeNext = SignInRedirect.nextPath

/** Whole seconds from `now` until `until`, at least 1 (a `Retry-After`). */
export const secondsUntil = (until: DateTime.Utc, now: DateTime.Utc) =>
  Math.max(1, Math.ceil((DateTime.toEpochMillis(until) - DateTime.toEpochMillis(now)) / 1000))

const showLogin = (
  view: { next: string; email?: string; error?: string; notice?: string },
  status = 200,
  retryAfter?: number
) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { csrfKey } = yield* ServerSecrets
    const nonce = CsrfToken.nonceOf(request.cookies[loginCookie])
    const response = HttpServerResponse.setCookieUnsafe(
      respond(loginPage({ ...view, csrf: CsrfToken.token(csrfKey, nonce, loginPurpose) }), { status, assets: true }),
      loginCookie,
      nonce,
      { ...(yield* cookieOptions), sameSite: "strict" }
    )
    return retryAfter === undefined
      ? response
      : HttpServerResponse.setHeader(response, "retry-after", String(retryAfter))
  })

const loginForm = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const query = new URL(request.url, (yield* ServerConfig).baseUrl).searchParams
  const current = yield* (yield* SessionStore).resolve(request.cookies[cookieName])
  if (Option.isSome(current)) return HttpServerResponse.redirect(safeNext(query.get("next")), { status: 303 })
  return yield* showLogin({
    next: safeNext(query.get("next")),
    ...(query.get("signed_out") === "1" ? { notice: "You are signed out." } : {})
  })
})

const login = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const guard = yield* DashboardGuard
  const audit = yield* AuditLog
  const { csrfKey } = yield* ServerSecrets
  const form = new URLSearchParams(yield* request.text.pipe(Effect.orElseSucceed(() => "")))
  const email = (form.get("email") ?? "").trim().slice(0, 254)
  const next = safeNext(form.get("next"))
  if (
    !guard.sameOrigin(request) ||
    !CsrfToken.verify(csrfKey, request.cookies[loginCookie], loginPurpose, form.get("csrf") ?? undefined)
  )
    return forgedPage()
  const ip = guard.clientIp(request)
  const outcome = yield* (yield* UserRepository).signIn(email, form.get("password") ?? "", ip)
  switch (outcome._tag) {
    case "SignedIn":
      break
    case "Busy":
      // Refused unchecked; not recorded (a flood of these would write to the database for free).
      return yield* showLogin(
        {
          next,
          email,
          error:
            outcome.scope === "server"
              ? "Kassa is checking many sign-ins right now. Try again in a few seconds."
              : "Another sign-in from your address is being checked. Try again in a moment."
        },
        outcome.scope === "server" ? 503 : 429,
        outcome.retryAfterSeconds
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
        return yield* showLogin({ next, email, error: "The e-mail address or password is not right." }, 401)
      // The same words whether the e-mail address has an account or not.
      return yield* showLogin(
        {
          next,
          email,
          error: `Too many failed sign-ins from your address. Signing in with this e-mail address from here is locked until ${formatTime(outcome.until)}.`
        },
        429,
        secondsUntil(outcome.until, yield* DateTime.now)
      )
    }
  }
  const token = yield* (yield* SessionStore).create(outcome.user.id, {
    ip,
    userAgent: request.headers["user-agent"] ?? null
  })
  yield* audit.record({ label: outcome.user.email, userId: outcome.user.id, ip }, { action: "user.signed_in" })
  return HttpServerResponse.expireCookieUnsafe(
    yield* withSessionCookie(token, redirect(next)),
    loginCookie,
    yield* cookieOptions
  )
})

const logout = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* (yield* SessionStore).end(request.cookies[cookieName])
  yield* (yield* AuditLog).record((yield* SignedIn).actor, { action: "user.signed_out" })
  return HttpServerResponse.expireCookieUnsafe(
    HttpServerResponse.redirect("/dashboard/login?signed_out=1", { status: 303 }),
    cookieName,
    yield* cookieOptions
  )
})

export const routes = [
  route("GET", "/dashboard/login", "public", loginForm),
  route("POST", "/dashboard/login", "public", login),
  route("POST", "/dashboard/logout", "signed_in", logout)
] as const

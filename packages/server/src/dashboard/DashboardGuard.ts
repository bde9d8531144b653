/**
 * What every dashboard route needs before it does anything: the signed-in session (or a redirect to sign in), for
 * a form post the CSRF check (session token + same-origin headers), for an application's pages the user's access to
 * it (not a member → 404, so ids of other applications reveal nothing; a member without the permission → 403), and
 * the actor the audit log records.
 */
import { DashboardAccess, Text } from "@kassa/core"
import { Context, Effect, Layer, Option } from "effect"
import { type HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { parseApplicationId, type StoredApplication } from "../applications/ApplicationRepository.ts"
import type { Actor } from "../audit/AuditLog.ts"
import { ClientAddress } from "../auth/ClientAddress.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { plainDocument, type Viewer } from "../pages/dashboard/DashboardLayout.ts"
import { html } from "../pages/Html.ts"
import { respond } from "../pages/Layout.ts"
import * as CsrfToken from "../security/CsrfToken.ts"
import { cookieName, type Session, SessionStore } from "../users/SessionStore.ts"
import { UserRepository } from "../users/UserRepository.ts"

/** A signed-in request. */
export interface Signed {
  readonly session: Session
  readonly viewer: Viewer
  readonly actor: Actor
  readonly request: HttpServerRequest.HttpServerRequest
  readonly query: URLSearchParams
}

/** A signed-in request inside one application. */
export interface InApplication extends Signed {
  readonly application: StoredApplication
  readonly access: DashboardAccess.Access
  readonly can: (permission: DashboardAccess.Permission) => boolean
}

/** A form post that passed the CSRF check. */
export interface Posted {
  readonly form: UrlParams.UrlParams
  /** A trimmed form value, "" when absent; U+0000 reads as U+FFFD (Text.toStorable). */
  readonly value: (name: string) => string
}

type Response = HttpServerResponse.HttpServerResponse

export const messagePage = (status: number, title: string, message: string, back = "/dashboard") =>
  respond(
    plainDocument(
      title,
      html`<div class="card"><h1>${title}</h1><p>${message}</p><p><a href="${back}">Back to the dashboard</a></p></div>`
    ),
    { status }
  )

export const notFoundPage = () => messagePage(404, "Not found", "There is nothing here, or you have no access to it.")
export const forbiddenPage = () =>
  messagePage(403, "Not allowed", "Your role in this application does not allow this. Ask its owner or an operator.")
export const forgedPage = () =>
  messagePage(
    403,
    "Form refused",
    "This form was sent from another site, or it has expired. Go back, reload the page and try again."
  )

export class DashboardGuard extends Context.Service<
  DashboardGuard,
  {
    /** Runs `f` for a signed-in request; anyone else is sent to sign in (and back here afterwards). */
    readonly signedIn: <E, R>(
      request: HttpServerRequest.HttpServerRequest,
      f: (signed: Signed) => Effect.Effect<Response, E, R>
    ) => Effect.Effect<Response, E, R>
    /** As {@link signedIn}, for operator admins only (others get 404). */
    readonly operator: <E, R>(
      request: HttpServerRequest.HttpServerRequest,
      f: (signed: Signed) => Effect.Effect<Response, E, R>
    ) => Effect.Effect<Response, E, R>
    /** As {@link signedIn}, inside the application `id`, with `permission` needed. */
    readonly application: <E, R>(
      request: HttpServerRequest.HttpServerRequest,
      id: string,
      permission: DashboardAccess.Permission,
      f: (context: InApplication) => Effect.Effect<Response, E, R>
    ) => Effect.Effect<Response, E, R>
    /** Reads a posted form and checks its CSRF token and origin; a forged post gets 403 and `f` never runs. */
    readonly form: <E, R>(
      signed: Signed,
      f: (posted: Posted) => Effect.Effect<Response, E, R>
    ) => Effect.Effect<Response, E, R>
    /** Whether a post comes from a page of this server (Origin and Sec-Fetch-Site, which browsers send on posts). */
    readonly sameOrigin: (request: HttpServerRequest.HttpServerRequest) => boolean
    readonly clientIp: (request: HttpServerRequest.HttpServerRequest) => string | null
  }
>()("@kassa/server/dashboard/DashboardGuard") {
  static readonly layer = Layer.effect(
    DashboardGuard,
    Effect.gen(function* () {
      const sessions = yield* SessionStore
      const users = yield* UserRepository
      const clientAddress = yield* ClientAddress
      const config = yield* ServerConfig
      const ownOrigin = new URL(config.baseUrl).origin

      const clientIp = clientAddress.text

      const sameOrigin = (request: HttpServerRequest.HttpServerRequest) =>
        CsrfToken.sameOrigin(request.headers, ownOrigin)

      const signedIn = <E, R>(
        request: HttpServerRequest.HttpServerRequest,
        f: (signed: Signed) => Effect.Effect<Response, E, R>
      ): Effect.Effect<Response, E, R> =>
        Effect.flatMap(sessions.resolve(request.cookies[cookieName]), (found) => {
          const url = new URL(request.url, ownOrigin)
          if (Option.isNone(found)) {
            const next = `${url.pathname}${url.search}`
            return Effect.succeed(
              HttpServerResponse.redirect(`/dashboard/login?next=${encodeURIComponent(next)}`, {
                status: 303,
                headers: { "cache-control": "no-store" }
              })
            )
          }
          const session = found.value
          return f({
            session,
            request,
            query: url.searchParams,
            viewer: { email: session.user.email, operatorAdmin: session.user.operatorAdmin, csrf: session.csrf },
            actor: { label: session.user.email, userId: session.user.id, ip: clientIp(request) }
          })
        })

      return DashboardGuard.of({
        signedIn,
        operator: (request, f) =>
          signedIn(request, (signed) =>
            signed.session.user.operatorAdmin ? f(signed) : Effect.succeed(notFoundPage())
          ),
        application: (request, id, permission, f) =>
          signedIn(request, (signed) =>
            Effect.gen(function* () {
              const applicationId = parseApplicationId(id)
              if (Option.isNone(applicationId)) return notFoundPage()
              const found = yield* users.applicationWithRole(signed.session.user.id, applicationId.value)
              if (Option.isNone(found)) return notFoundPage()
              const { application, role } = found.value
              const access: DashboardAccess.Access = { operatorAdmin: signed.session.user.operatorAdmin, role }
              if (!DashboardAccess.can(access, "view")) return notFoundPage()
              if (!DashboardAccess.can(access, permission)) return forbiddenPage()
              return yield* f({
                ...signed,
                application,
                access,
                can: (wanted) => DashboardAccess.can(access, wanted)
              })
            })
          ),
        form: (signed, f) =>
          Effect.flatMap(signed.request.urlParamsBody.pipe(Effect.orElseSucceed(() => UrlParams.empty)), (form) => {
            // U+0000 (no one types it; PostgreSQL refuses it) becomes U+FFFD, so no form value can fail a write.
            const value = (name: string) =>
              Text.toStorable(Option.getOrElse(UrlParams.getFirst(form, name), () => "").trim())
            if (
              !sameOrigin(signed.request) ||
              !sessions.verifyCsrf(signed.session, Option.getOrUndefined(UrlParams.getFirst(form, "csrf")))
            )
              return Effect.succeed(forgedPage())
            return f({ form, value })
          }),
        sameOrigin,
        clientIp
      })
    })
  )
}

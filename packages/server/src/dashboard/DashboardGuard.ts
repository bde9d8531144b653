/**
 * The router middleware every dashboard route goes through, as the merchant API's `Authentication` middleware
 * provides `CurrentApplication`: it provides what the route's permission (DashboardRoute) says —
 *
 * - the signed-in user (`SignedIn`), or a redirect to sign in and back;
 * - for operator pages, an operator admin (anyone else: 404);
 * - under `/dashboard/apps/:id`, the application and the user's access to it (`InApplication`; not a member → 404,
 *   so ids of other applications reveal nothing; a member without the permission → 403, so a viewer's posts are
 *   refused before anything is read);
 * - for a signed-in form post, the form (`PostedForm`) once its session CSRF token and same-origin headers pass
 *   (a forged post gets 403 and the handler never runs).
 */
import { DashboardAccess, Text } from "@kassa/core"
import { Context, Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { parseApplicationId } from "../applications/ApplicationRepository.ts"
import { ClientAddress } from "../auth/ClientAddress.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import { forbiddenPage, forgedPage, notFoundPage } from "../pages/dashboard/MessagePages.ts"
import * as CsrfToken from "../security/CsrfToken.ts"
import { cookieName, SessionStore } from "../users/SessionStore.ts"
import { UserRepository } from "../users/UserRepository.ts"
import {
  type DashboardRoute,
  InApplication,
  PostedForm,
  type Response,
  type Signed,
  SignedIn
} from "./DashboardRoute.ts"

export class DashboardGuard extends Context.Service<
  DashboardGuard,
  {
    /** The route's handler behind its permission's checks, with what they found provided. */
    readonly middleware: <R>(route: DashboardRoute<R>) => Effect.Effect<Response, never, R | HttpRouter.Provided>
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

      /** The signed-in request, or the redirect to sign in (and back here afterwards). */
      const signIn = Effect.fn("DashboardGuard.signIn")(function* (request: HttpServerRequest.HttpServerRequest) {
        const found = yield* sessions.resolve(request.cookies[cookieName])
        const url = new URL(request.url, ownOrigin)
        if (Option.isNone(found)) return Option.none<Signed>()
        const session = found.value
        return Option.some<Signed>({
          session,
          request,
          query: url.searchParams,
          viewer: { email: session.user.email, operatorAdmin: session.user.operatorAdmin, csrf: session.csrf },
          actor: { label: session.user.email, userId: session.user.id, ip: clientIp(request) }
        })
      })

      const toSignIn = (request: HttpServerRequest.HttpServerRequest) => {
        const url = new URL(request.url, ownOrigin)
        return HttpServerResponse.redirect(
          `/dashboard/login?next=${encodeURIComponent(`${url.pathname}${url.search}`)}`,
          { status: 303, headers: { "cache-control": "no-store" } }
        )
      }

      /** The application of the path with the user's access, or the refusal (404 or 403). */
      const inApplication = Effect.fn("DashboardGuard.inApplication")(function* (
        signed: Signed,
        permission: DashboardAccess.Permission
      ) {
        const params = yield* HttpRouter.params
        const applicationId = parseApplicationId(params.id ?? "")
        if (Option.isNone(applicationId)) return notFoundPage()
        const found = yield* users.applicationWithRole(signed.session.user.id, applicationId.value)
        if (Option.isNone(found)) return notFoundPage()
        const { application, role } = found.value
        const access: DashboardAccess.Access = { operatorAdmin: signed.session.user.operatorAdmin, role }
        if (!DashboardAccess.can(access, "view")) return notFoundPage()
        if (!DashboardAccess.can(access, permission)) return forbiddenPage()
        return InApplication.of({ application, access, can: (wanted) => DashboardAccess.can(access, wanted) })
      })

      /** The posted form once its CSRF token and origin pass; `forgedPage` otherwise. */
      const readForm = Effect.fn("DashboardGuard.readForm")(function* (signed: Signed) {
        const form = yield* signed.request.urlParamsBody.pipe(Effect.orElseSucceed(() => UrlParams.empty))
        if (
          !sameOrigin(signed.request) ||
          !sessions.verifyCsrf(signed.session, Option.getOrUndefined(UrlParams.getFirst(form, "csrf")))
        )
          return forgedPage()
        // U+0000 (no one types it; PostgreSQL refuses it) becomes U+FFFD, so no form value can fail a write.
        const value = (name: string) =>
          Text.toStorable(Option.getOrElse(UrlParams.getFirst(form, name), () => "").trim())
        return PostedForm.of({ form, value })
      })

      const middleware = <R>(route: DashboardRoute<R>): Effect.Effect<Response, never, R | HttpRouter.Provided> => {
        const handler = route.handler as Effect.Effect<Response, never, R | HttpRouter.Provided>
        const permission = route.permission
        if (permission === "public") return handler
        return Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const signed = yield* signIn(request)
          if (Option.isNone(signed)) return toSignIn(request)
          let provided = Context.make(SignedIn, signed.value)
          if (permission === "operator") {
            if (!signed.value.session.user.operatorAdmin) return notFoundPage()
          } else if (permission !== "signed_in") {
            const found = yield* inApplication(signed.value, permission)
            if (HttpServerResponse.isHttpServerResponse(found)) return found
            provided = Context.add(provided, InApplication, found)
          }
          if (route.method === "POST") {
            const posted = yield* readForm(signed.value)
            if (HttpServerResponse.isHttpServerResponse(posted)) return posted
            provided = Context.add(provided, PostedForm, posted)
          }
          return yield* Effect.provideContext(handler, provided)
        })
      }

      return DashboardGuard.of({ middleware, sameOrigin, clientIp })
    })
  )
}

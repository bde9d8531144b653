/**
 * One row of a dashboard section's route table — method, path, permission, handler — and what the router's guard
 * (DashboardGuard.middleware) provides to the handler for its permission: the signed-in user (`SignedIn`), inside an
 * application the application and the user's access to it (`InApplication`), for a form post the form that passed
 * the CSRF check (`PostedForm`). The router, the 405 answers (`Allow`) and the tests are built from the same tables,
 * as the merchant API's routes, errors and client are built from `MerchantApi`. Also here, shared by every section:
 * the page sizes and the one redirect after an action.
 */
import type { DashboardAccess } from "@kassa/core"
import { Context, type Effect } from "effect"
import { type HttpRouter, type HttpServerRequest, HttpServerResponse, type UrlParams } from "effect/http"
import type { StoredApplication } from "../applications/ApplicationRepository.ts"
import type { Actor } from "../audit/AuditLog.ts"
import type { Viewer } from "../pages/dashboard/DashboardLayout.ts"
import type { Session } from "../users/SessionStore.ts"

export type Response = HttpServerResponse.HttpServerResponse

/**
 * Who may use a route: anyone (`public`: sign-in, the assets), any signed-in user, operator admins (anyone else gets
 * 404), or, under `/dashboard/apps/:id`, a member (or operator admin) whose role has this permission (a non-member
 * gets 404, a member without it 403).
 */
export type Permission = "public" | "signed_in" | "operator" | DashboardAccess.Permission

/** A signed-in request. */
export interface Signed {
  readonly session: Session
  readonly viewer: Viewer
  readonly actor: Actor
  readonly request: HttpServerRequest.HttpServerRequest
  readonly query: URLSearchParams
}

/** The signed-in user of this request (every route but the public ones). */
export class SignedIn extends Context.Service<SignedIn, Signed>()("@kassa/server/dashboard/SignedIn") {}

/** A signed-in request inside one application. */
export interface ApplicationAccess {
  readonly application: StoredApplication
  readonly access: DashboardAccess.Access
  readonly can: (permission: DashboardAccess.Permission) => boolean
}

/** The application of the path and the user's access to it (routes under `/dashboard/apps/:id`). */
export class InApplication extends Context.Service<InApplication, ApplicationAccess>()(
  "@kassa/server/dashboard/InApplication"
) {}

/** A form post that passed the CSRF check. */
export interface Posted {
  readonly form: UrlParams.UrlParams
  /** A trimmed form value, "" when absent; U+0000 reads as U+FFFD (Text.toStorable). */
  readonly value: (name: string) => string
}

/** The posted form of a signed-in POST, after the CSRF and same-origin checks. */
export class PostedForm extends Context.Service<PostedForm, Posted>()("@kassa/server/dashboard/PostedForm") {}

type Method = "GET" | "POST"

/** What the guard provides to a route with this method and permission. */
export type Provided<M extends Method, P extends Permission> =
  | HttpRouter.Provided
  | (P extends "public" ? never : SignedIn)
  | (P extends DashboardAccess.Permission ? InApplication : never)
  | (M extends "POST" ? (P extends "public" ? never : PostedForm) : never)

/** A row of a route table; `R` is what the handler needs beyond what the guard provides (the services). */
export interface DashboardRoute<R = never> {
  readonly method: Method
  readonly path: `/dashboard${string}`
  readonly permission: Permission
  readonly handler: Effect.Effect<Response, never, R | SignedIn | InApplication | PostedForm | HttpRouter.Provided>
}

/**
 * A row of a route table. What the handler needs beyond what the guard provides for `method` and `permission` is
 * left as services the router must provide, so a GET asking for the posted form, or an operator page asking for
 * the application, does not compile where the router is built.
 */
export const route = <const M extends Method, const P extends Permission, R>(
  method: M,
  path: `/dashboard${string}`,
  permission: P,
  handler: Effect.Effect<Response, never, R>
): DashboardRoute<Exclude<R, Provided<M, P>>> => ({
  method,
  path,
  permission,
  // What R holds beyond the services is exactly what the guard provides for this method and permission.
  handler: handler as DashboardRoute<Exclude<R, Provided<M, P>>>["handler"]
})

/** The services the handlers of a table need (what the router provides them from its layer). */
export type ServicesOf<Routes extends ReadonlyArray<DashboardRoute<unknown>>> =
  Routes[number] extends DashboardRoute<infer R> ? R : never

/**
 * Rows a page shows: the lists across applications (operator) show more than an application's own lists, which sit
 * beside the application's navigation.
 */
export const pageSize = { acrossApplications: 50, inApplication: 25 } as const

/**
 * The answer to a form post that changed something (post/redirect/get): 303 to `path`, with `?notice=` naming the
 * fixed message that page shows (pages/dashboard/Notices.ts). Never cached: the next page shows the change.
 */
export const redirect = (path: string, notice?: string): Response =>
  HttpServerResponse.redirect(
    notice === undefined ? path : `${path}${path.includes("?") ? "&" : "?"}notice=${encodeURIComponent(notice)}`,
    { status: 303, headers: { "cache-control": "no-store" } }
  )

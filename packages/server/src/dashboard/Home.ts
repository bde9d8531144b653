/**
 * The landing page (`/dashboard`): operator admins go to the operator's overview, a member of one application
 * to it, anyone else sees the applications they belong to. Template: pages/dashboard/HomePage.ts.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { homePage } from "../pages/dashboard/HomePage.ts"
import { UserRepository } from "../users/UserRepository.ts"
import { route, SignedIn } from "./DashboardRoute.ts"

const home = Effect.gen(function* () {
  const signed = yield* SignedIn
  if (signed.session.user.operatorAdmin) return HttpServerResponse.redirect("/dashboard/operator", { status: 303 })
  const memberships = yield* (yield* UserRepository).memberships(signed.session.user.id)
  const [only] = memberships
  if (memberships.length === 1 && only !== undefined)
    return HttpServerResponse.redirect(`/dashboard/apps/${only.applicationId}`, { status: 303 })
  return homePage({ viewer: signed.viewer, lastLoginAt: signed.session.user.lastLoginAt, memberships })
})

export const routes = [route("GET", "/dashboard", "signed_in", home)] as const

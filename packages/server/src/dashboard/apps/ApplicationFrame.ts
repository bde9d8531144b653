/**
 * What every handler of an application's pages reads from the guard: the frame its template draws (who looks, at
 * which application, allowed to do what), the path of a page of this application, the notice code of the request.
 */
import { DashboardAccess } from "@kassa/core"
import { Effect } from "effect"
import type { AppFrame } from "../../pages/dashboard/ApplicationShared.ts"
import { InApplication, redirect, SignedIn } from "../DashboardRoute.ts"

export const frame: Effect.Effect<AppFrame, never, SignedIn | InApplication> = Effect.gen(function* () {
  const signed = yield* SignedIn
  const { application, access, can } = yield* InApplication
  return { viewer: signed.viewer, application, can, seesUrlSecrets: DashboardAccess.seesUrlSecrets(access) }
})

/** A path inside this application's dashboard. */
export const here = (suffix = ""): Effect.Effect<string, never, InApplication> =>
  InApplication.useSync(({ application }) => `/dashboard/apps/${application.id}${suffix}`)

/** The redirect after an action, to a page of this application, with its notice. */
export const redirectHere = (suffix: string, notice?: string) =>
  Effect.map(here(suffix), (path) => redirect(path, notice))

/** The `?notice=` code of the request, for the page to look up. */
export const noticeCode: Effect.Effect<string | null, never, SignedIn> = SignedIn.useSync((signed) =>
  signed.query.get("notice")
)

/**
 * An application's overview (`/dashboard/apps/:id`): its payments of the last 30 days, members and active keys.
 * Template: pages/dashboard/ApplicationOverview.ts.
 */
import { DateTime, Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKeyRepository } from "../../applications/ApiKeyRepository.ts"
import * as OverviewPages from "../../pages/dashboard/ApplicationOverview.ts"
import { UserRepository } from "../../users/UserRepository.ts"
import * as ApplicationQueries from "../ApplicationQueries.ts"
import { InApplication, route } from "../DashboardRoute.ts"
import { frame } from "./ApplicationFrame.ts"

const overview = Effect.gen(function* () {
  const { application } = yield* InApplication
  const queries = ApplicationQueries.make(yield* SqlClient.SqlClient)
  const since = DateTime.subtractDuration(yield* DateTime.now, Duration.days(30))
  const counts = yield* queries.overview(application.id, since)
  const members = yield* (yield* UserRepository).members(application.id)
  const active = (yield* (yield* ApiKeyRepository).list(application.id)).filter((key) => key.revoked_at === null)
  return OverviewPages.overviewPage(yield* frame, {
    counts,
    members,
    activeKeys: {
      test: active.filter((key) => key.mode === "test").length,
      live: active.filter((key) => key.mode === "live").length
    }
  })
})

export const routes = [route("GET", "/dashboard/apps/:id", "view", overview)] as const

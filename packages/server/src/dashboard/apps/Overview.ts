/**
 * An application's overview (`/dashboard/apps/:id`): its payments of the last 30 days, members and active keys, and
 * the charts of its daily roll-up (issue 22 §3: stats/StatsReads) in the mode of `?mode=` (by default live when it
 * had live payments, else test). Template: pages/dashboard/ApplicationOverview.ts.
 */
import { DateTime, Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKeyRepository } from "../../applications/ApiKeyRepository.ts"
import * as OverviewPages from "../../pages/dashboard/ApplicationOverview.ts"
import * as StatsReads from "../../stats/StatsReads.ts"
import { UserRepository } from "../../users/UserRepository.ts"
import * as ApplicationQueries from "../ApplicationQueries.ts"
import { InApplication, route, SignedIn } from "../DashboardRoute.ts"
import * as QueryFilters from "../QueryFilters.ts"
import { frame } from "./ApplicationFrame.ts"

const overview = Effect.gen(function* () {
  const { application } = yield* InApplication
  const sql = yield* SqlClient.SqlClient
  const queries = ApplicationQueries.make(sql)
  const now = yield* DateTime.now
  const since = DateTime.subtractDuration(now, Duration.days(30))
  const counts = yield* queries.overview(application.id, since)
  const mode = QueryFilters.mode((yield* SignedIn).query, "mode")
  const stats = yield* StatsReads.make(sql).overview(application.id, now, mode)
  const members = yield* (yield* UserRepository).members(application.id)
  const active = (yield* (yield* ApiKeyRepository).list(application.id)).filter((key) => key.revoked_at === null)
  return OverviewPages.overviewPage(yield* frame, {
    counts,
    stats,
    members,
    activeKeys: {
      test: active.filter((key) => key.mode === "test").length,
      live: active.filter((key) => key.mode === "live").length
    }
  })
})

export const routes = [route("GET", "/dashboard/apps/:id", "view", overview)] as const

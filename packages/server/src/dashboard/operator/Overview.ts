/**
 * The operator's overview (`/dashboard/operator`, issue 22 §3): how many applications there are and wait for review,
 * and the charts of every application's daily roll-up (stats/StatsReads) in the mode of `?mode=` (by default live
 * when there were live payments, else test). Operator admins only. Template: pages/dashboard/OperatorOverview.ts.
 */
import { DateTime, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ApplicationRepository } from "../../applications/ApplicationRepository.ts"
import { respondPage } from "../../pages/dashboard/DashboardLayout.ts"
import { operatorOverviewPage } from "../../pages/dashboard/OperatorOverview.ts"
import * as StatsReads from "../../stats/StatsReads.ts"
import { route, SignedIn } from "../DashboardRoute.ts"
import * as QueryFilters from "../QueryFilters.ts"

const overview = Effect.gen(function* () {
  const signed = yield* SignedIn
  const all = yield* (yield* ApplicationRepository).list
  const mode = QueryFilters.mode(signed.query, "mode")
  const stats = yield* StatsReads.make(yield* SqlClient.SqlClient).overview("all", yield* DateTime.now, mode)
  return respondPage(
    operatorOverviewPage({
      viewer: signed.viewer,
      applications: {
        total: all.length,
        pendingReview: all.filter((application) => application.status === "pending_review").length,
        active: all.filter((application) => application.status === "active").length
      },
      stats
    })
  )
})

export const routes = [route("GET", "/dashboard/operator", "operator", overview)] as const

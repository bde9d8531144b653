/**
 * The audit log (`/dashboard/operator/audit`): entries newest first, filtered by application, actor and action.
 * Template: `auditPage` in pages/dashboard/OperatorViews.ts.
 */
import { Effect, Option } from "effect"
import { parseApplicationId } from "../../applications/ApplicationRepository.ts"
import { AuditLog } from "../../audit/AuditLog.ts"
import { toDate } from "../../database/Columns.ts"
import { respondPage } from "../../pages/dashboard/DashboardLayout.ts"
import { auditPage } from "../../pages/dashboard/OperatorViews.ts"
import { pageSize, route, SignedIn } from "../DashboardRoute.ts"
import { choices, nextCursor, param } from "./OperatorFrame.ts"

const list = Effect.gen(function* () {
  const audit = yield* AuditLog
  const application = parseApplicationId(yield* param("application"))
  const actor = yield* param("actor", 254)
  const action = yield* param("action", 100)
  const beforeText = yield* param("before", 20)
  const before = /^[0-9]{1,15}$/.test(beforeText) ? Number(beforeText) : undefined
  const page = yield* audit.list({
    limit: pageSize.acrossApplications,
    applicationId: Option.getOrUndefined(application),
    actor: actor.length === 0 ? undefined : actor,
    action: action.length === 0 ? undefined : action,
    before
  })
  return respondPage(
    auditPage({
      viewer: (yield* SignedIn).viewer,
      filters: { application: Option.getOrElse(application, () => ""), actor, action },
      applications: yield* choices,
      actions: yield* audit.actions,
      entries: page.entries.map((entry) => ({
        id: entry.id,
        at: toDate(entry.at),
        actor: entry.actor,
        action: entry.action,
        applicationId: entry.applicationId,
        applicationName: entry.applicationName,
        target: entry.target,
        details: entry.details,
        ip: entry.ip
      })),
      before: nextCursor({ rows: page.entries, hasMore: page.hasMore }, (entry) => entry.id)
    })
  )
})

export const routes = [route("GET", "/dashboard/operator/audit", "operator", list)] as const

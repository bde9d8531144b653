/** The dashboards' services: users, sessions, the audit log, and the guard every dashboard route goes through. */
import { Layer } from "effect"
import { AuditLog } from "../audit/AuditLog.ts"
import { SessionStore } from "../users/SessionStore.ts"
import { UserRepository } from "../users/UserRepository.ts"
import { DashboardGuard } from "./DashboardGuard.ts"

export const layer = DashboardGuard.layer.pipe(
  Layer.provideMerge(SessionStore.layer),
  Layer.provideMerge(Layer.mergeAll(UserRepository.layer, AuditLog.layer))
)

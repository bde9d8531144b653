/**
 * The dashboards' services: users, memberships, sessions, the audit log, and the guard every dashboard route goes
 * through.
 */
import { Layer } from "effect"
import { AuditLog } from "../audit/AuditLog.ts"
import { Memberships } from "../users/Memberships.ts"
import { SessionStore } from "../users/SessionStore.ts"
import { UserRepository } from "../users/UserRepository.ts"
import { DashboardGuard } from "./DashboardGuard.ts"

export const layer = Layer.mergeAll(DashboardGuard.layer, Memberships.layer).pipe(
  Layer.provideMerge(SessionStore.layer),
  Layer.provideMerge(Layer.mergeAll(UserRepository.layer, AuditLog.layer))
)

/**
 * Changes to who belongs to an application, with their audit entries, in one transaction each. An owner's changes
 * (an application's members page) keep the application owned: the owners' memberships are locked while a change is
 * decided, so two owners demoting or removing each other at the same moment are decided one after the other and the
 * second is refused. Only the operator (its application page, the operator API) may take the last owner away.
 */
import { type DashboardAccess, Ids } from "@kassa/core"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type Actor, AuditLog, type Entry } from "../audit/AuditLog.ts"
import * as Columns from "../database/Columns.ts"
import { type User, UserRepository } from "./UserRepository.ts"

/** An owner's membership, as locked while a change is decided. */
const OwnerRow = Schema.Struct({ user_id: Ids.UserId })

/** What an owner's membership change came to. */
export type MembershipChange = "changed" | "unchanged" | "not_member" | "last_owner" | "not_owner"

/** A change asked for inside an application: `role` null removes the user; only `add` makes a non-member one. */
export interface ChangeRequest {
  readonly applicationId: Ids.ApplicationId
  readonly actor: Actor
  /** An operator admin acts without being an owner. */
  readonly operatorAdmin: boolean
  readonly user: User
  readonly role: DashboardAccess.Role | null
  readonly add: boolean
}

/** The audit entry of a membership added or changed, alike from every page. */
export const membershipSet = (
  applicationId: Ids.ApplicationId,
  user: User,
  role: DashboardAccess.Role,
  previous: DashboardAccess.Role | null
): Entry => ({
  action: "membership.set",
  applicationId,
  target: user.id,
  details: { email: user.email, role, previous_role: previous }
})

export class Memberships extends Context.Service<
  Memberships,
  {
    /**
     * Sets the user's role (`null` removes them) as a member acting as owner, or an operator admin, inside the
     * application — unless it would leave the application without an owner. A member acting as owner must still be
     * one under the owners' lock.
     */
    readonly change: (request: ChangeRequest) => Effect.Effect<MembershipChange>
    /** The operator's page: sets the user's role, adding them if they are no member. */
    readonly set: (
      actor: Actor,
      applicationId: Ids.ApplicationId,
      user: User,
      role: DashboardAccess.Role
    ) => Effect.Effect<void>
    /** The operator's page: removes the user; false if they were no member. */
    readonly remove: (actor: Actor, applicationId: Ids.ApplicationId, user: User) => Effect.Effect<boolean>
  }
>()("@kassa/server/users/Memberships") {
  static readonly layer = Layer.effect(
    Memberships,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const users = yield* UserRepository
      const audit = yield* AuditLog

      const change = Effect.fn("Memberships.change")(function* (request: ChangeRequest) {
        const { applicationId: id, actor, user, role } = request
        return yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const owners = (yield* Columns.all(OwnerRow)(sql`
                SELECT user_id FROM memberships WHERE application_id = ${id} AND role = 'owner' ORDER BY user_id FOR UPDATE
              `)).map((row) => row.user_id)
              const isOwner = actor.userId !== null && owners.includes(actor.userId)
              if (!request.operatorAdmin && !isOwner) return "not_owner" as const
              const previous = yield* users.roleIn(user.id, id)
              if (previous === null && !request.add) return "not_member" as const
              if (previous === role) return "unchanged" as const
              if (previous === "owner" && role !== "owner" && owners.every((owner) => owner === user.id))
                return "last_owner" as const
              if (role === null) yield* users.removeMembership(user.id, id)
              else yield* users.setRole(user.id, id, role)
              yield* audit.record(
                actor,
                role === null
                  ? {
                      action: "membership.removed",
                      applicationId: id,
                      target: user.id,
                      details: { email: user.email, role: previous }
                    }
                  : membershipSet(id, user, role, previous)
              )
              return "changed" as const
            })
          )
          .pipe(Effect.orDie)
      })

      const set = Effect.fn("Memberships.set")(function* (
        actor: Actor,
        applicationId: Ids.ApplicationId,
        user: User,
        role: DashboardAccess.Role
      ) {
        yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const previous = yield* users.roleIn(user.id, applicationId)
              yield* users.setRole(user.id, applicationId, role)
              yield* audit.record(actor, membershipSet(applicationId, user, role, previous))
            })
          )
          .pipe(Effect.orDie)
      })

      const remove = Effect.fn("Memberships.remove")(function* (
        actor: Actor,
        applicationId: Ids.ApplicationId,
        user: User
      ) {
        return yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const removed = yield* users.removeMembership(user.id, applicationId)
              if (removed)
                yield* audit.record(actor, {
                  action: "membership.removed",
                  applicationId,
                  target: user.id,
                  details: { email: user.email }
                })
              return removed
            })
          )
          .pipe(Effect.orDie)
      })

      return Memberships.of({ change, set, remove })
    })
  )
}

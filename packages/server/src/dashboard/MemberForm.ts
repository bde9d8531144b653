/**
 * The add-member form and its audit entry, shared by an application's members page and the operator's application
 * page, so both read the form and record the change alike.
 */
import { DashboardAccess, type Ids } from "@kassa/core"
import { Effect, Option, Result, Schema } from "effect"
import type * as MemberPages from "../pages/dashboard/ApplicationMembers.ts"
import type { Entry } from "./AuditLog.ts"
import type { Posted } from "./DashboardGuard.ts"
import type { User, UserRepository } from "./UserRepository.ts"

const isRole = Schema.is(DashboardAccess.Role)

/**
 * The add-member form, as this application's members page and the operator's application page read it: the existing
 * user the e-mail address names and a valid role, or the form as typed with its field errors. An unknown address is
 * reported as only that; `unknownHint` says what to do about it on the page.
 */
export const readMemberForm = (
  users: UserRepository["Service"],
  posted: Posted,
  unknownHint: string
): Effect.Effect<Result.Result<{ readonly user: User; readonly role: DashboardAccess.Role }, MemberPages.MemberForm>> =>
  Effect.gen(function* () {
    const email = posted.value("email").slice(0, 254)
    const role = posted.value("role")
    const user = email.length === 0 ? Option.none<User>() : yield* users.findByEmail(email)
    const errors: Record<string, string> = {}
    if (Option.isNone(user))
      errors.email =
        email.length === 0 ? "Enter the e-mail address of a user." : `No user has this e-mail address. ${unknownHint}`
    if (!isRole(role)) errors.role = "The role must be owner, developer or viewer."
    return Option.isSome(user) && isRole(role)
      ? Result.succeed({ user: user.value, role })
      : Result.fail({ email, role, errors })
  })

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

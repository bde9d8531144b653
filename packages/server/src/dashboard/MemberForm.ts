/**
 * The add-member form, shared by an application's members page and the operator's application page, so both read
 * it alike (the change itself and its audit entry: users/Memberships).
 */
import { DashboardAccess } from "@kassa/core"
import { Effect, Option, Result, Schema } from "effect"
import type * as MemberPages from "../pages/dashboard/ApplicationMembers.ts"
import type { User, UserId, UserRepository } from "../users/UserRepository.ts"
import type { Posted } from "./DashboardRoute.ts"

const isRole = Schema.is(DashboardAccess.Role)

/**
 * Who the add-member form may name, and how a miss is told: an operator admin may name any user; an application
 * owner only a user who shares an application with them (issue #11 point 15), whom they can see on that
 * application's members page already. Anyone else — an unknown address, or a user the owner has never shared an
 * application with — gets the same answer, so the form tells nobody which addresses have accounts.
 */
export interface MemberLookup {
  readonly find: (email: string) => Effect.Effect<Option.Option<User>>
  /** The field error of an address the lookup does not find: the same for an unknown and an unreachable user. */
  readonly notFound: string
}

/** Any user, for operator admins (who see the list of users anyway). */
export const anyUser = (users: UserRepository["Service"], hint: string): MemberLookup => ({
  find: users.findByEmail,
  notFound: `No user has this e-mail address. ${hint}`
})

/** Only users who share an application with `userId` (an owner adding members). */
export const colleagueOf = (users: UserRepository["Service"], userId: UserId): MemberLookup => ({
  find: (email) => users.findColleague(email, userId),
  notFound:
    "No user you share an application with has this e-mail address. Ask the operator of this Kassa installation to add them."
})

/**
 * The add-member form, as this application's members page and the operator's application page read it: the user the
 * e-mail address names (as `lookup` finds them) and a valid role, or the form as typed with its field errors. A
 * string `lookup` is the hint after "No user has this e-mail address." for any user (the operator's page).
 */
export const readMemberForm = (
  users: UserRepository["Service"],
  posted: Posted,
  lookup: MemberLookup | string
): Effect.Effect<Result.Result<{ readonly user: User; readonly role: DashboardAccess.Role }, MemberPages.MemberForm>> =>
  Effect.gen(function* () {
    const { find, notFound } = typeof lookup === "string" ? anyUser(users, lookup) : lookup
    const email = posted.value("email").slice(0, 254)
    const role = posted.value("role")
    const user = email.length === 0 ? Option.none<User>() : yield* find(email)
    const errors: Record<string, string> = {}
    if (Option.isNone(user)) errors.email = email.length === 0 ? "Enter the e-mail address of a user." : notFound
    if (!isRole(role)) errors.role = "The role must be owner, developer or viewer."
    return Option.isSome(user) && isRole(role)
      ? Result.succeed({ user: user.value, role })
      : Result.fail({ email, role, errors })
  })

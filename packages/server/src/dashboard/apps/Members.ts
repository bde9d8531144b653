/**
 * An application's members (`/dashboard/apps/:id/members`): owners add users they share another application with
 * (operator admins any user), change roles and remove members, never the last owner's ownership (409; the owner lock
 * is users/Memberships). Template: pages/dashboard/ApplicationMembers.ts.
 */
import { DashboardAccess } from "@kassa/core"
import { Effect, Option, Result, Schema } from "effect"
import { HttpRouter } from "effect/http"
import * as MemberPages from "../../pages/dashboard/ApplicationMembers.ts"
import { forbiddenPage, notFoundPage } from "../../pages/dashboard/MessagePages.ts"
import { type MembershipChange, Memberships } from "../../users/Memberships.ts"
import { parseUserId, type User, UserRepository } from "../../users/UserRepository.ts"
import { InApplication, PostedForm, type Response, redirect, route, SignedIn } from "../DashboardRoute.ts"
import { colleagueOf, readMemberForm } from "../MemberForm.ts"
import { frame, noticeCode, redirectHere } from "./ApplicationFrame.ts"

const isRole = Schema.is(DashboardAccess.Role)

const page = (extra: Partial<MemberPages.MembersView> = {}, status = 200) =>
  Effect.gen(function* () {
    const { application } = yield* InApplication
    const members = yield* (yield* UserRepository).members(application.id)
    return MemberPages.membersPage(yield* frame, { members, notice: yield* noticeCode, ...extra }, status)
  })

/** The user of the path; none for a malformed or unknown id. */
const pathUser = Effect.gen(function* () {
  const id = parseUserId((yield* HttpRouter.params).userId)
  if (Option.isNone(id)) return Option.none<User>()
  return yield* (yield* UserRepository).find(id.value)
})

/** Asks Memberships for the change as this request's user, and answers: `done`, or why it was refused. */
const changeTo = <R>(
  user: User,
  role: DashboardAccess.Role | null,
  add: boolean,
  done: Effect.Effect<Response, never, R>
) =>
  Effect.gen(function* () {
    const { application, access } = yield* InApplication
    const { actor } = yield* SignedIn
    const change: MembershipChange = yield* (yield* Memberships).change({
      applicationId: application.id,
      actor,
      operatorAdmin: access.operatorAdmin,
      user,
      role,
      add
    })
    switch (change) {
      case "changed":
        return yield* done
      case "unchanged":
        return yield* redirectHere("/members", "role_unchanged")
      case "not_member":
        return notFoundPage()
      case "not_owner":
        return forbiddenPage()
      case "last_owner":
        return yield* page(
          {
            notice: null,
            problem: `${user.id === actor.userId ? "You are" : `${user.email} is`} the only owner of this application, so the ownership cannot be removed or given up. Make another member an owner first: an application always keeps at least one owner.`
          },
          409
        )
    }
  })

const add = Effect.gen(function* () {
  const { access } = yield* InApplication
  const { actor } = yield* SignedIn
  const users = yield* UserRepository
  // Owners reach only users they share an application with; operator admins any user (MemberForm).
  const read = yield* readMemberForm(
    users,
    yield* PostedForm,
    access.operatorAdmin || actor.userId === null
      ? "Ask the operator of this Kassa installation to create the user first."
      : colleagueOf(users, actor.userId)
  )
  if (Result.isFailure(read)) return yield* page({ notice: null, form: read.failure }, 422)
  return yield* changeTo(read.success.user, read.success.role, true, redirectHere("/members", "member_added"))
})

const changeRole = Effect.gen(function* () {
  const user = yield* pathUser
  if (Option.isNone(user)) return notFoundPage()
  const role = (yield* PostedForm).value("role")
  if (!isRole(role)) return yield* page({ notice: null, problem: "The role must be owner, developer or viewer." }, 422)
  return yield* changeTo(user.value, role, false, redirectHere("/members", "role_changed"))
})

const confirmRemoval = Effect.gen(function* () {
  const { application } = yield* InApplication
  const user = yield* pathUser
  if (Option.isNone(user)) return notFoundPage()
  const role = yield* (yield* UserRepository).roleIn(user.value.id, application.id)
  if (role === null) return notFoundPage()
  return MemberPages.confirmRemovalPage(yield* frame, { user: user.value, role })
})

const remove = Effect.gen(function* () {
  const { access } = yield* InApplication
  const { actor } = yield* SignedIn
  const user = yield* pathUser
  if (Option.isNone(user)) return notFoundPage()
  // Who removed themselves has no access left here (unless an operator admin): back to their applications.
  const left = user.value.id === actor.userId && !access.operatorAdmin
  return yield* changeTo(
    user.value,
    null,
    false,
    left ? Effect.succeed(redirect("/dashboard")) : redirectHere("/members", "member_removed")
  )
})

const base = "/dashboard/apps/:id/members"

export const routes = [
  route("GET", base, "view", page()),
  route("POST", base, "manage_members", add),
  route("POST", `${base}/:userId/role`, "manage_members", changeRole),
  route("GET", `${base}/:userId/remove`, "manage_members", confirmRemoval),
  route("POST", `${base}/:userId/remove`, "manage_members", remove)
] as const

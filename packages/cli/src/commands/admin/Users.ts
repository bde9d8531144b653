/**
 * `kassa admin users create|list|grant|remove|set-password|deactivate|reactivate`: dashboard users and their roles.
 * A password not given is generated, and shown once.
 */
import type { OperatorSchemas } from "@kassa/core"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type OperatorSettings as Connection, call } from "../../Operator.ts"
import { fields, output, reporting, table } from "../../Output.ts"
import * as Settings from "../../Settings.ts"
import { answer, type Request } from "./OperatorCall.ts"

type User = typeof OperatorSchemas.UserView.Encoded

const userId = Argument.String("user-id").pipe(Argument.withDescription("The user's id"))

const renderUsers = (users: ReadonlyArray<User>) =>
  users.length === 0
    ? "No users."
    : table(
        [
          ["id", "ID"],
          ["email", "E-mail"],
          ["operator_admin", "Operator admin"],
          ["active", "Active"],
          ["memberships", "Roles"],
          ["last_login_at", "Last sign-in"]
        ],
        users.map((user) => ({
          ...user,
          operator_admin: user.operator_admin ? "yes" : "no",
          active: user.active ? "yes" : "no",
          memberships: user.memberships.map((membership) => `${membership.role}@${membership.application_id}`).join(" ")
        }))
      )

const passwordFlag = Flag.String("password").pipe(
  Flag.withDescription("At least 12 characters; without it a random one is made and shown this once"),
  Flag.optional
)

/** The password given with `--password`, or a random one (which the command then shows once). */
const chosenOrGenerated = (given: Option.Option<string>) =>
  Option.match(given, {
    onSome: (password) => Effect.succeed({ password, generated: false }),
    onNone: () =>
      // Loaded here, not at the top: only these two commands need it, and @kassa/core's modules would slow every start.
      Effect.promise(() => import("@kassa/core/dashboard/Credentials")).pipe(
        Effect.flatMap((Credentials) => Credentials.generatePassword),
        Effect.map((password) => ({ password, generated: true }))
      )
  })

const usersCreate = Command.make(
  "create",
  {
    ...Settings.operator,
    email: Flag.String("email").pipe(Flag.withDescription("The user's e-mail address (their sign-in)")),
    password: passwordFlag,
    operatorAdmin: Flag.Boolean("operator-admin").pipe(
      Flag.withDescription("Service staff: sees and manages every application"),
      Flag.withDefault(false)
    )
  },
  (input) =>
    Effect.gen(function* () {
      const { password, generated } = yield* chosenOrGenerated(input.password)
      const user = yield* call<User>(input, "operatorUsers.create", (client) =>
        client.operatorUsers.create({
          payload: { email: input.email, password, operator_admin: input.operatorAdmin },
          responseMode: "response-only"
        })
      )
      return yield* output(
        input.json,
        generated ? { ...user, password } : user,
        () =>
          `${fields([
            ["ID", user.id],
            ["E-mail", user.email],
            ["Operator admin", user.operator_admin ? "yes" : "no"],
            ...(generated ? ([["Password", password]] as const) : [])
          ])}${generated ? "\n\nThe password is shown this once." : ""}`
      )
    }).pipe(reporting(input.json))
).pipe(Command.withDescription("Create a dashboard user"))

const usersList = Command.make("list", { ...Settings.operator }, (input) =>
  answer<typeof OperatorSchemas.UserList.Encoded>(
    input,
    "operatorUsers.list",
    (client) => client.operatorUsers.list({ responseMode: "response-only" }),
    ({ data }) => renderUsers(data)
  )
).pipe(Command.withDescription("List dashboard users with their roles"))

const membershipApplication = Flag.String("application").pipe(Flag.withDescription("The application's id"))

const usersGrant = Command.make(
  "grant",
  {
    ...Settings.operator,
    userId,
    application: membershipApplication,
    role: Flag.Literals("role", ["owner", "developer", "viewer"]).pipe(
      Flag.withDescription("owner (everything), developer (keys, webhooks, deliveries, payments), viewer (read only)")
    )
  },
  (input) =>
    answer<User>(
      input,
      "operatorUsers.setMembership",
      (client) =>
        client.operatorUsers.setMembership({
          params: { id: input.userId, application_id: input.application },
          payload: { role: input.role },
          responseMode: "response-only"
        }),
      (updated) => renderUsers([updated])
    )
).pipe(Command.withDescription("Give a user a role in an application (replaces their role there)"))

const usersRemove = Command.make(
  "remove",
  { ...Settings.operator, userId, application: membershipApplication },
  (input) =>
    answer<User>(
      input,
      "operatorUsers.removeMembership",
      (client) =>
        client.operatorUsers.removeMembership({
          params: { id: input.userId, application_id: input.application },
          responseMode: "response-only"
        }),
      (updated) => renderUsers([updated])
    )
).pipe(Command.withDescription("Remove a user from an application"))

/** `PATCH /users/{id}` with one change, answered as the changed user. */
const updateUser = (
  input: Connection & { readonly userId: string },
  change: Request<"operatorUsers", "update">["payload"]
) =>
  call<User>(input, "operatorUsers.update", (client) =>
    client.operatorUsers.update({ params: { id: input.userId }, payload: change, responseMode: "response-only" })
  )

const usersSetPassword = Command.make(
  "set-password",
  {
    ...Settings.operator,
    userId,
    password: passwordFlag
  },
  (input) =>
    Effect.gen(function* () {
      const { password, generated } = yield* chosenOrGenerated(input.password)
      const user = yield* updateUser(input, { password })
      return yield* output(input.json, generated ? { ...user, password } : user, () =>
        generated
          ? `${fields([
              ["E-mail", user.email],
              ["Password", password]
            ])}\n\nThe password is shown this once. Every session of the user has ended.`
          : `New password set for ${user.email}. Every session of the user has ended.`
      )
    }).pipe(reporting(input.json))
).pipe(Command.withDescription("Give a user a new password (clears the lock-out and ends every session of the user)"))

const usersDeactivate = Command.make("deactivate", { ...Settings.operator, userId }, (input) =>
  updateUser(input, { active: false }).pipe(
    Effect.flatMap((user) => output(input.json, user, (updated) => renderUsers([updated]))),
    reporting(input.json)
  )
).pipe(Command.withDescription("Deactivate a user: sign-in refused, every session ends, roles kept"))

const usersReactivate = Command.make("reactivate", { ...Settings.operator, userId }, (input) =>
  updateUser(input, { active: true }).pipe(
    Effect.flatMap((user) => output(input.json, user, (updated) => renderUsers([updated]))),
    reporting(input.json)
  )
).pipe(Command.withDescription("Let a deactivated user sign in again"))

export const users = Command.make("users").pipe(
  Command.withDescription("Dashboard users: create, list, grant, remove, set-password, deactivate, reactivate"),
  Command.withSubcommands([
    usersCreate,
    usersList,
    usersGrant,
    usersRemove,
    usersSetPassword,
    usersDeactivate,
    usersReactivate
  ])
)

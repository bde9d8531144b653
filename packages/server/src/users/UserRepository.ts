/**
 * Dashboard users and their memberships (issue #6). Passwords are stored only as scrypt hashes (PasswordHash); sign-in
 * is throttled by the core's LoginThrottle over states this process keeps (SignInThrottle: per client address, and per
 * e-mail address and client address). The `failed_logins` and `locked_until` columns of issue #6's per-account lock
 * are no longer read (a per-account lock let anyone lock the owner out); they are only cleared.
 */
import { Credentials, DashboardAccess, Ids } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema, type Statement } from "effect/sql"
import { ApplicationRow, type StoredApplication } from "../applications/ApplicationRepository.ts"
import { ServerConfig } from "../config/ServerConfig.ts"
import * as Columns from "../database/Columns.ts"
import * as PasswordHash from "./PasswordHash.ts"
import * as SignInThrottle from "./SignInThrottle.ts"

export const UserId = Ids.UserId
export type UserId = Ids.UserId

export interface User {
  readonly id: UserId
  readonly email: string
  readonly operatorAdmin: boolean
  readonly createdAt: DateTime.Utc
  readonly lastLoginAt: DateTime.Utc | null
  /** When an operator deactivated the account; null while it is active. */
  readonly deactivatedAt: DateTime.Utc | null
}

/** An operator's change to a user; unset fields stay as they are. */
export interface UserChanges {
  /** A new password: the lock-out is cleared and every session of the user ends. */
  readonly password?: string | undefined
  readonly operatorAdmin?: boolean | undefined
  /** False deactivates (sign-in refused, every session ends; memberships kept); true reactivates. */
  readonly active?: boolean | undefined
}

interface StoredUser extends User {
  readonly passwordHash: string
}

export interface Membership {
  readonly applicationId: Ids.ApplicationId
  readonly applicationName: string
  readonly role: DashboardAccess.Role
}

/** A membership with its user, for lists of every user. */
export interface UserMembership extends Membership {
  readonly userId: UserId
}

/** A user and every membership of theirs, for lists of users. */
export interface UserWithMemberships {
  readonly user: User
  readonly memberships: ReadonlyArray<Membership>
}

export interface Member {
  readonly user: User
  readonly role: DashboardAccess.Role
}

export class EmailTaken extends Schema.TaggedError<EmailTaken>()("EmailTaken", {}) {}

/**
 * What a sign-in attempt found: the user; a wrong password or unknown address (not told apart to the person signing
 * in; `userId`, for the audit log, is null for an unknown address); a block of this e-mail address from this client
 * address, or of the client address (`started`: this attempt's wrong password began it; otherwise the attempt was
 * refused unchecked, before any lookup, so a known and an unknown address get the same answer); or no capacity to
 * check now (`server`: the password hasher's queue is full; otherwise this client address has checks running).
 */
export type SignIn =
  | { readonly _tag: "SignedIn"; readonly user: User }
  | { readonly _tag: "Refused"; readonly userId: UserId | null }
  | {
      readonly _tag: "Locked"
      readonly userId: UserId | null
      readonly until: DateTime.Utc
      readonly started: boolean
    }
  | { readonly _tag: "Busy"; readonly scope: "address" | "server"; readonly retryAfterSeconds: number }

/** What checking a password found, before the throttle records it. */
type Check =
  | { readonly _tag: "Right"; readonly user: StoredUser }
  | { readonly _tag: "Wrong"; readonly userId: UserId | null }
  /** A right password that no longer holds: the account changed while it was checked (deactivated, new password). */
  | { readonly _tag: "Stale"; readonly userId: UserId }

// PostgreSQL refuses U+0000 (and jsonb a lone surrogate): such an e-mail address names no user, so it is not looked up.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding U+0000 is the point
const unstorable = /[\u0000\p{Cs}]/u

/** A row of `users` as read (the retired lock-out columns are not). */
export const UserRow = Schema.Struct({
  id: Ids.UserId,
  email: Schema.String,
  password_hash: Schema.String,
  operator_admin: Schema.Boolean,
  created_at: Columns.Timestamp,
  last_login_at: Columns.NullableTimestamp,
  deactivated_at: Columns.NullableTimestamp
})
export type UserRow = typeof UserRow.Type

const storedOfRow = (row: UserRow): StoredUser => ({
  id: row.id,
  email: row.email,
  operatorAdmin: row.operator_admin,
  createdAt: row.created_at,
  lastLoginAt: row.last_login_at,
  deactivatedAt: row.deactivated_at,
  passwordHash: row.password_hash
})

const publicUser = ({ passwordHash: _hash, ...user }: StoredUser): User => user

/** The user of a decoded `users` row (for queries that read users together with something else). */
export const userOfRow = (row: UserRow): User => publicUser(storedOfRow(row))

const MembershipRow = Schema.Struct({
  user_id: Ids.UserId,
  application_id: Ids.ApplicationId,
  role: DashboardAccess.Role,
  name: Schema.String
})
const RoleRow = Schema.Struct({ role: DashboardAccess.Role })
const ApplicationWithRoleRow = Schema.Struct({
  ...ApplicationRow.fields,
  member_role: Schema.NullOr(DashboardAccess.Role)
})
const MemberRow = Schema.Struct({ ...UserRow.fields, role: DashboardAccess.Role })

export const parseUserId = Schema.decodeUnknownOption(Ids.UserId)

export class UserRepository extends Context.Service<
  UserRepository,
  {
    readonly create: (input: {
      readonly email: string
      readonly password: string
      readonly operatorAdmin: boolean
    }) => Effect.Effect<User, EmailTaken>
    readonly find: (id: UserId) => Effect.Effect<Option.Option<User>>
    readonly findByEmail: (email: string) => Effect.Effect<Option.Option<User>>
    /** The user with this e-mail address if they are a member of an application `colleague` is a member of. */
    readonly findColleague: (email: string, colleague: UserId) => Effect.Effect<Option.Option<User>>
    readonly list: Effect.Effect<ReadonlyArray<User>>
    /**
     * Checks a password from the client `address` under the sign-in throttle (the core's LoginThrottle, its states
     * in this process: SignInThrottle) and records the outcome.
     */
    readonly signIn: (email: string, password: string, address: string | null) => Effect.Effect<SignIn>
    /** An operator's change (`UserChanges`), in one transaction with the end of the user's sessions it implies. */
    readonly update: (id: UserId, changes: UserChanges) => Effect.Effect<Option.Option<User>>
    readonly memberships: (id: UserId) => Effect.Effect<ReadonlyArray<Membership>>
    /** Every user with their memberships (by application name), in two queries whatever the number of users. */
    readonly listWithMemberships: Effect.Effect<ReadonlyArray<UserWithMemberships>>
    readonly roleIn: (id: UserId, applicationId: Ids.ApplicationId) => Effect.Effect<DashboardAccess.Role | null>
    /** The application and the user's role in it (null when not a member) in one query; none for an unknown id. */
    readonly applicationWithRole: (
      id: UserId,
      applicationId: Ids.ApplicationId
    ) => Effect.Effect<
      Option.Option<{ readonly application: StoredApplication; readonly role: DashboardAccess.Role | null }>
    >
    readonly members: (applicationId: Ids.ApplicationId) => Effect.Effect<ReadonlyArray<Member>>
    readonly setRole: (id: UserId, applicationId: Ids.ApplicationId, role: DashboardAccess.Role) => Effect.Effect<void>
    readonly removeMembership: (id: UserId, applicationId: Ids.ApplicationId) => Effect.Effect<boolean>
  }
>()("@kassa/server/users/UserRepository") {
  static readonly layer = Layer.effect(
    UserRepository,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const cost = yield* PasswordHash.costFor((yield* ServerConfig).environment)

      const findByEmailRow = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: UserRow,
        execute: (email) => sql`SELECT * FROM users WHERE email = ${email}`
      })
      const findStored = (email: string) =>
        findByEmailRow(Credentials.normalizeEmail(email)).pipe(Effect.map(Option.map(storedOfRow)), Effect.orDie)
      const findRow = SqlSchema.findOneOption({
        Request: Ids.UserId,
        Result: UserRow,
        execute: (id) => sql`SELECT * FROM users WHERE id = ${id}`
      })

      const create = Effect.fn("UserRepository.create")(function* (input: {
        readonly email: string
        readonly password: string
        readonly operatorAdmin: boolean
      }) {
        const passwordHash = yield* PasswordHash.hash(input.password, cost)
        const id = UserId.make(globalThis.crypto.randomUUID())
        const now = Columns.toDate(yield* DateTime.now)
        const row = yield* Columns.first(UserRow)(sql`
          INSERT INTO users (id, email, password_hash, operator_admin, created_at)
          VALUES (${id}, ${Credentials.normalizeEmail(input.email)}, ${passwordHash}, ${input.operatorAdmin}, ${now})
          ON CONFLICT (email) DO NOTHING
          RETURNING *
        `).pipe(Effect.orDie)
        if (Option.isNone(row)) return yield* new EmailTaken()
        return userOfRow(row.value)
      })

      const throttle = SignInThrottle.make()

      /** The password checked against the account (or, for an unknown address, the decoy: the same time). */
      const check = (account: string, password: string): Effect.Effect<Check, PasswordHash.HasherBusy> =>
        Effect.gen(function* () {
          const found = unstorable.test(account) ? Option.none<StoredUser>() : yield* findStored(account)
          if (Option.isNone(found)) {
            yield* PasswordHash.decoy(cost).pipe(Effect.flatMap((decoy) => PasswordHash.verify(password, decoy)))
            return { _tag: "Wrong", userId: null } satisfies Check as Check
          }
          const user = found.value
          const verified = yield* PasswordHash.verify(password, user.passwordHash)
          // A deactivated account does the same work and gets the same answer as a wrong password.
          if (!verified || user.deactivatedAt !== null)
            return { _tag: "Wrong", userId: user.id } satisfies Check as Check
          // Signed in only if the account is still as it was checked: a deactivation or a new password that came
          // meanwhile holds.
          const now = Columns.toDate(yield* DateTime.now)
          const updated = yield* sql`
            UPDATE users SET failed_logins = 0, locked_until = NULL, last_login_at = ${now}
            WHERE id = ${user.id} AND password_hash = ${user.passwordHash} AND deactivated_at IS NULL
            RETURNING id
          `.pipe(Effect.orDie)
          return updated.length === 0
            ? ({ _tag: "Stale", userId: user.id } satisfies Check as Check)
            : ({ _tag: "Right", user: { ...user, lastLoginAt: DateTime.makeUnsafe(now) } } satisfies Check as Check)
        })

      const signIn = Effect.fn("UserRepository.signIn")(function* (
        email: string,
        password: string,
        address: string | null
      ) {
        const account = Credentials.normalizeEmail(email)
        // Decided before anything is looked up or hashed, so a refusal here costs nothing and says nothing.
        const admission = throttle.enter(address, account, yield* DateTime.now)
        if (admission._tag === "Blocked")
          return { _tag: "Locked", userId: null, until: admission.until, started: false } satisfies SignIn as SignIn
        if (admission._tag === "Busy")
          return { _tag: "Busy", scope: "address", retryAfterSeconds: 1 } satisfies SignIn as SignIn
        let settled = false
        const settle = (outcome: "right" | "wrong" | "none") =>
          Effect.map(DateTime.now, (now) => {
            settled = true
            return throttle.done(address, account, outcome, now)
          })
        return yield* check(account, password).pipe(
          Effect.flatMap((checked): Effect.Effect<SignIn> => {
            if (checked._tag === "Right")
              return Effect.as(settle("right"), { _tag: "SignedIn", user: publicUser(checked.user) })
            if (checked._tag === "Stale") return Effect.as(settle("none"), { _tag: "Refused", userId: checked.userId })
            return Effect.map(
              settle("wrong"),
              (pair): SignIn =>
                pair.blockedUntil === null
                  ? { _tag: "Refused", userId: checked.userId }
                  : { _tag: "Locked", userId: checked.userId, until: pair.blockedUntil, started: true }
            )
          }),
          Effect.catchTag("HasherBusy", () =>
            Effect.as(settle("none"), {
              _tag: "Busy",
              scope: "server",
              retryAfterSeconds: PasswordHash.busyRetryAfterSeconds
            } satisfies SignIn as SignIn)
          ),
          // Interrupted or failed otherwise: the slot is freed all the same, and nothing is counted.
          Effect.onExit(() => (settled ? Effect.void : Effect.asVoid(settle("none"))))
        )
      })

      const membershipsWhere = (condition: Statement.Fragment) =>
        Columns.all(MembershipRow)(sql`
          SELECT m.user_id, m.application_id, m.role, a.name FROM memberships m
          JOIN applications a ON a.id = m.application_id
          WHERE ${condition} ORDER BY a.name, a.id
        `).pipe(
          Effect.orDie,
          Effect.map((rows) =>
            rows.map(
              (row): UserMembership => ({
                userId: row.user_id,
                applicationId: row.application_id,
                applicationName: row.name,
                role: row.role
              })
            )
          )
        )

      const list = Columns.all(UserRow)(sql`SELECT * FROM users ORDER BY created_at, email`).pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map(userOfRow))
      )

      return UserRepository.of({
        create,
        find: (id) => findRow(id).pipe(Effect.map(Option.map(userOfRow)), Effect.orDie),
        findByEmail: (email) => findStored(email).pipe(Effect.map(Option.map(publicUser))),
        findColleague: (email, colleague) => {
          const account = Credentials.normalizeEmail(email)
          if (unstorable.test(account)) return Effect.succeedNone
          return Columns.first(UserRow)(sql`
            SELECT u.* FROM users u
            WHERE u.email = ${account} AND EXISTS (
              SELECT 1 FROM memberships theirs JOIN memberships mine ON mine.application_id = theirs.application_id
              WHERE theirs.user_id = u.id AND mine.user_id = ${colleague}
            )
          `).pipe(Effect.map(Option.map(userOfRow)), Effect.orDie)
        },
        list,
        signIn,
        update: Effect.fn("UserRepository.update")(function* (id: UserId, changes: UserChanges) {
          const now = Columns.toDate(yield* DateTime.now)
          const columns: Record<string, unknown> = {}
          if (changes.password !== undefined) {
            columns.password_hash = yield* PasswordHash.hash(changes.password, cost)
            columns.failed_logins = 0
            columns.locked_until = null
          }
          if (changes.operatorAdmin !== undefined) columns.operator_admin = changes.operatorAdmin
          if (changes.active !== undefined) columns.deactivated_at = changes.active ? null : now
          const endsSessions = changes.password !== undefined || changes.active === false
          return yield* Effect.gen(function* () {
            const found =
              Object.keys(columns).length === 0
                ? yield* findRow(id)
                : yield* Columns.first(UserRow)(
                    sql`UPDATE users SET ${sql.update(columns)} WHERE id = ${id} RETURNING *`
                  )
            if (Option.isNone(found)) return Option.none<User>()
            if (endsSessions) yield* sql`DELETE FROM sessions WHERE user_id = ${id}`
            if (changes.password !== undefined) throttle.forgetAccount(found.value.email)
            return Option.some(userOfRow(found.value))
          }).pipe(sql.withTransaction, Effect.orDie)
        }),
        memberships: (id) => membershipsWhere(sql`m.user_id = ${id}`),
        listWithMemberships: Effect.all([list, membershipsWhere(sql`true`)]).pipe(
          Effect.map(([users, memberships]) => {
            const byUser = new Map<string, Array<Membership>>()
            for (const membership of memberships) {
              const own = byUser.get(membership.userId)
              if (own === undefined) byUser.set(membership.userId, [membership])
              else own.push(membership)
            }
            return users.map((user) => ({ user, memberships: byUser.get(user.id) ?? [] }))
          })
        ),
        roleIn: (id, applicationId) =>
          Columns.first(RoleRow)(
            sql`SELECT role FROM memberships WHERE user_id = ${id} AND application_id = ${applicationId}`
          ).pipe(
            Effect.orDie,
            Effect.map((row) => (Option.isNone(row) ? null : row.value.role))
          ),
        applicationWithRole: (id, applicationId) =>
          Columns.first(ApplicationWithRoleRow)(sql`
            SELECT a.*, m.role AS member_role FROM applications a
            LEFT JOIN memberships m ON m.application_id = a.id AND m.user_id = ${id}
            WHERE a.id = ${applicationId}
          `).pipe(
            Effect.orDie,
            Effect.map(
              Option.map(({ member_role, ...application }) => ({
                application: application satisfies StoredApplication,
                role: member_role
              }))
            )
          ),
        members: (applicationId) =>
          Columns.all(MemberRow)(sql`
            SELECT u.*, m.role FROM memberships m JOIN users u ON u.id = m.user_id
            WHERE m.application_id = ${applicationId} ORDER BY u.email
          `).pipe(
            Effect.orDie,
            Effect.map((rows) => rows.map(({ role, ...user }): Member => ({ user: userOfRow(user), role })))
          ),
        setRole: (id, applicationId, role) =>
          DateTime.now.pipe(
            Effect.flatMap(
              (now) => sql`
                INSERT INTO memberships (user_id, application_id, role, created_at)
                VALUES (${id}, ${applicationId}, ${role}, ${Columns.toDate(now)})
                ON CONFLICT (user_id, application_id) DO UPDATE SET role = EXCLUDED.role
              `
            ),
            Effect.orDie,
            Effect.asVoid
          ),
        removeMembership: (id, applicationId) =>
          sql`DELETE FROM memberships WHERE user_id = ${id} AND application_id = ${applicationId} RETURNING 1`.pipe(
            Effect.orDie,
            Effect.map((rows) => rows.length > 0)
          )
      })
    })
  )
}

/**
 * Dashboard users and their memberships (issue #6). Passwords are stored only as scrypt hashes (PasswordHash); the
 * lock-out state kept here is decided by the core's LoginThrottle.
 */
import { Credentials, type DashboardAccess, Ids, LoginThrottle } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { fromRow as applicationOfRow, type StoredApplication } from "../applications/ApplicationRepository.ts"
import * as PasswordHash from "../security/PasswordHash.ts"

export const UserId = Schema.String.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

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
  readonly throttle: LoginThrottle.ThrottleState
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
 * What a sign-in attempt found: the user, a wrong password or unknown address (not told apart to the person signing
 * in; `userId`, for the audit log, is null for an unknown address), or a lock.
 */
export type SignIn =
  | { readonly _tag: "SignedIn"; readonly user: User }
  | { readonly _tag: "Refused"; readonly userId: UserId | null }
  | { readonly _tag: "Locked"; readonly userId: UserId; readonly until: DateTime.Utc }

const utc = (value: unknown) => DateTime.makeUnsafe(value as Date)
const utcOrNull = (value: unknown) => (value === null || value === undefined ? null : utc(value))
const toDate = (value: DateTime.Utc) => new Date(DateTime.toEpochMillis(value))

const userFromRow = (row: Record<string, unknown>): StoredUser => ({
  id: UserId.make(String(row.id)),
  email: String(row.email),
  operatorAdmin: row.operator_admin === true,
  createdAt: utc(row.created_at),
  lastLoginAt: utcOrNull(row.last_login_at),
  deactivatedAt: utcOrNull(row.deactivated_at),
  passwordHash: String(row.password_hash),
  throttle: { failures: Number(row.failed_logins), lockedUntil: utcOrNull(row.locked_until) }
})

const publicUser = ({ passwordHash: _hash, throttle: _throttle, ...user }: StoredUser): User => user

/** The user of a `users` row (for queries that read users together with something else). */
export const userOfRow = (row: Record<string, unknown>): User => publicUser(userFromRow(row))

export const parseUserId = Schema.decodeUnknownOption(UserId.check(Schema.isUUID()))

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
    readonly list: Effect.Effect<ReadonlyArray<User>>
    /** Checks a password under the lock-out rule and records the outcome. */
    readonly signIn: (email: string, password: string) => Effect.Effect<SignIn>
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
>()("@kassa/server/dashboard/UserRepository") {
  static readonly layer = Layer.effect(
    UserRepository,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const findStored = (email: string) =>
        sql`SELECT * FROM users WHERE email = ${Credentials.normalizeEmail(email)}`.pipe(
          Effect.orDie,
          Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), userFromRow))
        )

      const create = Effect.fn("UserRepository.create")(function* (input: {
        readonly email: string
        readonly password: string
        readonly operatorAdmin: boolean
      }) {
        const passwordHash = yield* PasswordHash.hash(input.password)
        const id = UserId.make(globalThis.crypto.randomUUID())
        const now = toDate(yield* DateTime.now)
        const rows = yield* sql`
          INSERT INTO users (id, email, password_hash, operator_admin, created_at)
          VALUES (${id}, ${Credentials.normalizeEmail(input.email)}, ${passwordHash}, ${input.operatorAdmin}, ${now})
          ON CONFLICT (email) DO NOTHING
          RETURNING *
        `.pipe(Effect.orDie)
        const row = rows[0]
        if (row === undefined) return yield* new EmailTaken()
        return userOfRow(row)
      })

      const signIn = Effect.fn("UserRepository.signIn")(function* (email: string, password: string) {
        const found = yield* findStored(email)
        if (Option.isNone(found)) {
          yield* PasswordHash.decoy.pipe(Effect.flatMap((decoy) => PasswordHash.verify(password, decoy)))
          return { _tag: "Refused", userId: null } satisfies SignIn as SignIn
        }
        const user = found.value
        if (user.deactivatedAt !== null) {
          // The same work and the same answer as a wrong password: a deactivated account is not revealed.
          yield* PasswordHash.verify(password, user.passwordHash)
          return { _tag: "Refused", userId: user.id } satisfies SignIn as SignIn
        }
        const now = yield* DateTime.now
        if (LoginThrottle.isLocked(user.throttle, now) && user.throttle.lockedUntil !== null) {
          return { _tag: "Locked", userId: user.id, until: user.throttle.lockedUntil } satisfies SignIn as SignIn
        }
        const verified = yield* PasswordHash.verify(password, user.passwordHash)
        // The outcome is recorded against the account as it is after the hash, under its row lock: wrong guesses
        // verified side by side each count (read before hashing, they would all have counted as the first), and a
        // lock, a deactivation or a new password that came meanwhile holds.
        return yield* Effect.gen(function* () {
          const [row] = yield* sql`
            SELECT failed_logins, locked_until, deactivated_at, password_hash FROM users WHERE id = ${user.id} FOR UPDATE
          `
          if (row === undefined || row.deactivated_at !== null || row.password_hash !== user.passwordHash) {
            return { _tag: "Refused", userId: user.id } satisfies SignIn as SignIn
          }
          const current: LoginThrottle.ThrottleState = {
            failures: Number(row.failed_logins),
            lockedUntil: utcOrNull(row.locked_until)
          }
          const at = yield* DateTime.now
          if (LoginThrottle.isLocked(current, at) && current.lockedUntil !== null) {
            return { _tag: "Locked", userId: user.id, until: current.lockedUntil } satisfies SignIn as SignIn
          }
          if (!verified) {
            const next = LoginThrottle.afterFailure(current, at)
            yield* sql`
              UPDATE users SET failed_logins = ${next.failures},
                locked_until = ${next.lockedUntil === null ? null : toDate(next.lockedUntil)}
              WHERE id = ${user.id}
            `
            return next.lockedUntil !== null
              ? ({ _tag: "Locked", userId: user.id, until: next.lockedUntil } satisfies SignIn as SignIn)
              : ({ _tag: "Refused", userId: user.id } satisfies SignIn as SignIn)
          }
          yield* sql`
            UPDATE users SET failed_logins = 0, locked_until = NULL, last_login_at = ${toDate(at)} WHERE id = ${user.id}
          `
          return { _tag: "SignedIn", user: publicUser({ ...user, lastLoginAt: at }) } satisfies SignIn as SignIn
        }).pipe(sql.withTransaction, Effect.orDie)
      })

      const membershipsWhere = (condition: Statement.Fragment) =>
        sql`
          SELECT m.user_id, m.application_id, m.role, a.name FROM memberships m
          JOIN applications a ON a.id = m.application_id
          WHERE ${condition} ORDER BY a.name, a.id
        `.pipe(
          Effect.orDie,
          Effect.map((rows) =>
            rows.map(
              (row): UserMembership => ({
                userId: UserId.make(String(row.user_id)),
                applicationId: Ids.ApplicationId.make(String(row.application_id)),
                applicationName: String(row.name),
                role: row.role as DashboardAccess.Role
              })
            )
          )
        )

      const list = sql`SELECT * FROM users ORDER BY created_at, email`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map(userOfRow))
      )

      return UserRepository.of({
        create,
        find: (id) =>
          sql`SELECT * FROM users WHERE id = ${id}`.pipe(
            Effect.orDie,
            Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), userOfRow))
          ),
        findByEmail: (email) => findStored(email).pipe(Effect.map(Option.map(publicUser))),
        list,
        signIn,
        update: Effect.fn("UserRepository.update")(function* (id: UserId, changes: UserChanges) {
          const now = toDate(yield* DateTime.now)
          const columns: Record<string, unknown> = {}
          if (changes.password !== undefined) {
            columns.password_hash = yield* PasswordHash.hash(changes.password)
            columns.failed_logins = 0
            columns.locked_until = null
          }
          if (changes.operatorAdmin !== undefined) columns.operator_admin = changes.operatorAdmin
          if (changes.active !== undefined) columns.deactivated_at = changes.active ? null : now
          const endsSessions = changes.password !== undefined || changes.active === false
          return yield* Effect.gen(function* () {
            const rows =
              Object.keys(columns).length === 0
                ? yield* sql`SELECT * FROM users WHERE id = ${id}`
                : yield* sql`UPDATE users SET ${sql.update(columns)} WHERE id = ${id} RETURNING *`
            const row = rows[0]
            if (row === undefined) return Option.none<User>()
            if (endsSessions) yield* sql`DELETE FROM sessions WHERE user_id = ${id}`
            return Option.some(userOfRow(row))
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
          sql`SELECT role FROM memberships WHERE user_id = ${id} AND application_id = ${applicationId}`.pipe(
            Effect.orDie,
            Effect.map((rows) => (rows[0] === undefined ? null : (rows[0].role as DashboardAccess.Role)))
          ),
        applicationWithRole: (id, applicationId) =>
          sql`
            SELECT a.*, m.role AS member_role FROM applications a
            LEFT JOIN memberships m ON m.application_id = a.id AND m.user_id = ${id}
            WHERE a.id = ${applicationId}
          `.pipe(
            Effect.orDie,
            Effect.map((rows) =>
              Option.map(Option.fromNullishOr(rows[0]), (row) => ({
                application: applicationOfRow(row),
                role: (row.member_role as DashboardAccess.Role | null) ?? null
              }))
            )
          ),
        members: (applicationId) =>
          sql`
            SELECT u.*, m.role FROM memberships m JOIN users u ON u.id = m.user_id
            WHERE m.application_id = ${applicationId} ORDER BY u.email
          `.pipe(
            Effect.orDie,
            Effect.map((rows) =>
              rows.map((row): Member => ({ user: userOfRow(row), role: row.role as DashboardAccess.Role }))
            )
          ),
        setRole: (id, applicationId, role) =>
          DateTime.now.pipe(
            Effect.flatMap(
              (now) => sql`
                INSERT INTO memberships (user_id, application_id, role, created_at)
                VALUES (${id}, ${applicationId}, ${role}, ${toDate(now)})
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

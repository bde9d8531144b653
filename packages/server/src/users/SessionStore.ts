/**
 * Dashboard sessions (issue #6). The cookie holds a random 256-bit token; the database holds only its HMAC under a
 * key derived from the server secret, so a copy of the database opens no session. A session ends at logout, after
 * two hours without a request, or twelve hours after sign-in, whichever comes first. Each form of a session carries
 * a CSRF token derived from the session (HMAC again), checked in constant time.
 */
import { createHmac, randomBytes } from "node:crypto"
import { Context, DateTime, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import * as CsrfToken from "../security/CsrfToken.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"
import { type User, type UserId, UserRow, userOfRow } from "./UserRepository.ts"

export const cookieName = "kassa_session"
export const idleTimeout: Duration.Duration = Duration.hours(2)
export const absoluteTimeout: Duration.Duration = Duration.hours(12)

/** A signed-in request's session: the user and the CSRF token its forms must carry. */
export interface Session {
  readonly user: User
  readonly tokenHash: string
  readonly csrf: string
}

/** A live session's user, with when the session was last seen. */
const SessionRow = Schema.Struct({ ...UserRow.fields, session_last_seen_at: Columns.Timestamp })

export class SessionStore extends Context.Service<
  SessionStore,
  {
    /** Starts a session; answers the cookie's token, the one time it exists in clear. */
    readonly create: (
      userId: UserId,
      client: { readonly ip: string | null; readonly userAgent: string | null }
    ) => Effect.Effect<string>
    readonly resolve: (token: string | undefined) => Effect.Effect<Option.Option<Session>>
    readonly end: (token: string | undefined) => Effect.Effect<void>
    /** Whether `candidate` is the CSRF token of `session`. */
    readonly verifyCsrf: (session: Session, candidate: string | undefined) => boolean
  }
>()("@kassa/server/users/SessionStore") {
  static readonly layer = Layer.effect(
    SessionStore,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const key = Redacted.value((yield* ServerSecrets).sessionKey)
      const mac = (label: string, value: string) =>
        createHmac("sha256", key).update(`${label}:${value}`).digest("base64url")
      const hashToken = (token: string) => mac("session", token)
      const csrfOf = (tokenHash: string) => mac("csrf", tokenHash)

      // The session and its user in one round trip: this runs on every dashboard request.
      const findLive = SqlSchema.findOneOption({
        Request: Schema.Struct({ tokenHash: Schema.String, now: Columns.Timestamp, idleSince: Columns.Timestamp }),
        Result: SessionRow,
        execute: ({ tokenHash, now, idleSince }) => sql`
          SELECT u.*, s.last_seen_at AS session_last_seen_at FROM sessions s JOIN users u ON u.id = s.user_id
          WHERE s.token_hash = ${tokenHash} AND s.expires_at > ${now} AND s.last_seen_at > ${idleSince}
            AND u.deactivated_at IS NULL
        `
      })

      const resolve = Effect.fn("SessionStore.resolve")(function* (token: string | undefined) {
        if (token === undefined || token.length === 0 || token.length > 100) return Option.none<Session>()
        const tokenHash = hashToken(token)
        const now = yield* DateTime.now
        const idleSince = DateTime.subtractDuration(now, idleTimeout)
        const found = yield* findLive({ tokenHash, now, idleSince }).pipe(Effect.orDie)
        if (Option.isNone(found)) return Option.none<Session>()
        const { session_last_seen_at: lastSeenAt, ...user } = found.value
        // One write a minute at most keeps the idle clock without a write per page view.
        if (DateTime.toEpochMillis(now) - DateTime.toEpochMillis(lastSeenAt) > 60_000) {
          yield* sql`UPDATE sessions SET last_seen_at = ${Columns.toDate(now)} WHERE token_hash = ${tokenHash}`.pipe(
            Effect.orDie
          )
        }
        return Option.some<Session>({ user: userOfRow(user), tokenHash, csrf: csrfOf(tokenHash) })
      })

      return SessionStore.of({
        create: Effect.fn("SessionStore.create")(function* (userId, client) {
          const token = randomBytes(32).toString("base64url")
          const now = yield* DateTime.now
          yield* sql`
            INSERT INTO sessions (token_hash, user_id, created_at, last_seen_at, expires_at, ip, user_agent)
            VALUES (${hashToken(token)}, ${userId}, ${Columns.toDate(now)}, ${Columns.toDate(now)},
              ${Columns.toDate(DateTime.addDuration(now, absoluteTimeout))}, ${client.ip}, ${client.userAgent?.slice(0, 512) ?? null})
          `.pipe(Effect.orDie)
          // Expired sessions are refused by `resolve` and pruned in batches by Retention, not here: a sign-in must not
          // delete however many expired since the last one.
          return token
        }),
        resolve,
        end: (token) =>
          token === undefined
            ? Effect.void
            : sql`DELETE FROM sessions WHERE token_hash = ${hashToken(token)}`.pipe(Effect.orDie, Effect.asVoid),
        verifyCsrf: (session, candidate) => CsrfToken.matches(session.csrf, candidate)
      })
    })
  )
}

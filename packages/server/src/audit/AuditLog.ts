/**
 * The audit log (issue #6): every dashboard and operator action — who (a user's e-mail address, or the admin token),
 * what, on which application and object, when, and from which address. Entries are only ever added.
 */
import { type Ids, Text } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { likeLiteral } from "../database/Like.ts"
import type { UserId } from "../users/UserRepository.ts"

export interface Actor {
  /** The user's e-mail address, or "admin token". */
  readonly label: string
  readonly userId: UserId | null
  readonly ip: string | null
}

export interface Entry {
  readonly action: string
  readonly applicationId?: Ids.ApplicationId | null | undefined
  /** The object acted on: a key, delivery, payment or user id. */
  readonly target?: string | null | undefined
  /** What changed; never a secret. */
  readonly details?: Readonly<Record<string, unknown>> | undefined
}

/** An entry as read back: every field is there. */
export interface Recorded {
  readonly action: string
  readonly applicationId: Ids.ApplicationId | null
  readonly target: string | null
  readonly details: Readonly<Record<string, unknown>>
  readonly id: number
  readonly at: DateTime.Utc
  readonly actor: string
  readonly applicationName: string | null
  readonly ip: string | null
}

/** A page of the log, newest first, and whether older entries follow. */
export interface AuditPage {
  readonly entries: ReadonlyArray<Recorded>
  readonly hasMore: boolean
}

export interface ListQuery {
  readonly applicationId?: Ids.ApplicationId | undefined
  readonly actor?: string | undefined
  readonly action?: string | undefined
  readonly limit: number
  /** Entries older than this id (the next page). */
  readonly before?: number | undefined
}

// The log records what was attempted, as typed (a sign-in e-mail with U+0000 included): characters PostgreSQL
// cannot store become U+FFFD instead of failing the request.
const storableStrings = (_key: string, value: unknown) => (typeof value === "string" ? Text.toStorable(value) : value)

export class AuditLog extends Context.Service<
  AuditLog,
  {
    readonly record: (actor: Actor, entry: Entry) => Effect.Effect<void>
    readonly list: (query: ListQuery) => Effect.Effect<AuditPage>
    /** Every action the log holds, in order (the audit page's filter). */
    readonly actions: Effect.Effect<ReadonlyArray<string>>
  }
>()("@kassa/server/audit/AuditLog") {
  static readonly layer = Layer.effect(
    AuditLog,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return AuditLog.of({
        record: Effect.fn("AuditLog.record")(function* (actor: Actor, entry: Entry) {
          const now = new Date(DateTime.toEpochMillis(yield* DateTime.now))
          yield* sql`
            INSERT INTO audit_log (at, actor, user_id, action, application_id, target, details, ip)
            VALUES (${now}, ${Text.toStorable(actor.label)}, ${actor.userId}, ${entry.action},
              ${entry.applicationId ?? null}, ${typeof entry.target === "string" ? Text.toStorable(entry.target) : null},
              ${JSON.stringify(entry.details ?? {}, storableStrings)}, ${actor.ip})
          `.pipe(Effect.orDie)
        }),
        list: (query) => {
          // Only the filters given, so the planner can use the application's or the action's index.
          const clauses: Array<Statement.Fragment> = []
          if (query.applicationId !== undefined) clauses.push(sql`l.application_id = ${query.applicationId}`)
          if (query.actor !== undefined) clauses.push(sql`l.actor ILIKE ${`%${likeLiteral(query.actor)}%`}`)
          if (query.action !== undefined) clauses.push(sql`l.action = ${query.action}`)
          if (query.before !== undefined) clauses.push(sql`l.id < ${query.before}`)
          return sql`
            SELECT l.*, a.name AS application_name FROM audit_log l LEFT JOIN applications a ON a.id = l.application_id
            WHERE ${sql.and(clauses)}
            ORDER BY l.id DESC LIMIT ${query.limit + 1}
          `.pipe(
            Effect.orDie,
            Effect.map((rows) => ({
              hasMore: rows.length > query.limit,
              entries: rows.slice(0, query.limit).map(
                (row): Recorded => ({
                  id: Number(row.id),
                  at: DateTime.makeUnsafe(row.at as Date),
                  actor: String(row.actor),
                  action: String(row.action),
                  applicationId: (row.application_id as Ids.ApplicationId | null) ?? null,
                  applicationName: (row.application_name as string | null) ?? null,
                  target: (row.target as string | null) ?? null,
                  details: (typeof row.details === "string" ? JSON.parse(row.details) : row.details) as Record<
                    string,
                    unknown
                  >,
                  ip: (row.ip as string | null) ?? null
                })
              )
            }))
          )
        },
        // The distinct actions by the action index, one index probe per action (PostgreSQL has no skip scan):
        // `SELECT DISTINCT` would read every entry of a log that only grows, on every view of its page.
        actions: sql`
          WITH RECURSIVE found AS (
            SELECT min(action) AS action FROM audit_log
            UNION ALL
            SELECT (SELECT min(action) FROM audit_log WHERE action > found.action) FROM found WHERE found.action IS NOT NULL
          )
          SELECT action FROM found WHERE action IS NOT NULL
        `.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map((row) => String(row.action)))
        )
      })
    })
  )
}

/**
 * The application an operator API change acted on, when its path does not name it (creating an application, rolling
 * or revoking a key by its id): the handler names it, and the admin token's audit wrapper files the entry under it.
 * Provided per request by that wrapper only; elsewhere naming does nothing.
 */
export class AuditSubject extends Context.Service<
  AuditSubject,
  { readonly name: (applicationId: Ids.ApplicationId) => Effect.Effect<void> }
>()("@kassa/server/dashboard/AuditSubject") {}

/** Names the application the current operator API change acted on (see `AuditSubject`). */
export const nameApplication = (applicationId: Ids.ApplicationId): Effect.Effect<void> =>
  Effect.flatMap(Effect.serviceOption(AuditSubject), (subject) =>
    Option.isSome(subject) ? subject.value.name(applicationId) : Effect.void
  )

/**
 * The audit log (issue #6): every dashboard and operator action — who (a user's e-mail address, or the admin token),
 * what, on which application and object, when, and from which address. Entries are only ever added.
 */
import type { Ids } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { UserId } from "./UserRepository.ts"

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

export interface ListQuery {
  readonly applicationId?: Ids.ApplicationId | undefined
  readonly actor?: string | undefined
  readonly action?: string | undefined
  readonly limit: number
  /** Entries older than this id (the next page). */
  readonly before?: number | undefined
}

export class AuditLog extends Context.Service<
  AuditLog,
  {
    readonly record: (actor: Actor, entry: Entry) => Effect.Effect<void>
    readonly list: (query: ListQuery) => Effect.Effect<ReadonlyArray<Recorded>>
  }
>()("@kassa/server/dashboard/AuditLog") {
  static readonly layer = Layer.effect(
    AuditLog,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return AuditLog.of({
        record: Effect.fn("AuditLog.record")(function* (actor: Actor, entry: Entry) {
          const now = new Date(DateTime.toEpochMillis(yield* DateTime.now))
          yield* sql`
            INSERT INTO audit_log (at, actor, user_id, action, application_id, target, details, ip)
            VALUES (${now}, ${actor.label}, ${actor.userId}, ${entry.action}, ${entry.applicationId ?? null},
              ${entry.target ?? null}, ${JSON.stringify(entry.details ?? {})}, ${actor.ip})
          `.pipe(Effect.orDie)
        }),
        list: (query) =>
          sql`
            SELECT l.*, a.name AS application_name FROM audit_log l LEFT JOIN applications a ON a.id = l.application_id
            WHERE (${query.applicationId ?? null}::uuid IS NULL OR l.application_id = ${query.applicationId ?? null}::uuid)
              AND (${query.actor ?? null}::text IS NULL OR l.actor ILIKE '%' || ${query.actor ?? null}::text || '%')
              AND (${query.action ?? null}::text IS NULL OR l.action = ${query.action ?? null}::text)
              AND (${query.before ?? null}::bigint IS NULL OR l.id < ${query.before ?? null}::bigint)
            ORDER BY l.id DESC LIMIT ${query.limit}
          `.pipe(
            Effect.orDie,
            Effect.map((rows) =>
              rows.map(
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
            )
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

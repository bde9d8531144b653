/**
 * The audit log (issue #6): every dashboard and operator action — who (a user's e-mail address, or the admin token),
 * what, on which application and object, when, and from which address. Entries are only ever added.
 */
import { Ids, Text } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import { likeLiteral } from "../database/Like.ts"

/** What a dashboard does: one name per act, whichever dashboard (or the operator API's refund) did it. */
export const DashboardAction = Schema.Literals([
  "application.created",
  "application.approved",
  "application.reactivated",
  "application.suspended",
  "application.disabled",
  "application.settings_updated",
  "api_key.issued",
  "api_key.rolled",
  "api_key.revoked",
  "webhook.url_updated",
  "webhook.secret_regenerated",
  "webhook.test_sent",
  "delivery.resent",
  "refund.requested",
  "payment.simulated",
  "payment.cancelled",
  "payments.exported",
  "membership.set",
  "membership.removed",
  "provider_account.linked",
  "provider_account.link_refused",
  "provider_account.retired",
  "provider.read_now",
  "provider.discrepancy_refund",
  "user.created",
  "user.password_set",
  "user.deactivated",
  "user.reactivated",
  "user.operator_admin_granted",
  "user.operator_admin_revoked",
  "user.signed_in",
  "user.signed_out",
  "user.sign_in_failed",
  "user.sign_in_locked",
  "user.password_changed",
  "user.password_change_refused"
])

/** A change made with the admin token: `operator_api.<group>.<endpoint>` (docs/decisions.md, operator API). */
export const OperatorApiAction = Schema.TemplateLiteral(["operator_api.", Schema.String])
export type OperatorApiAction = typeof OperatorApiAction.Type

export const Action = Schema.Union([DashboardAction, OperatorApiAction])
export type Action = typeof Action.Type

/** Names the log once held for an act that now has another: read back, and filtered, as the act's name. */
const retired: Readonly<Record<string, Action>> = {
  // The application dashboard logged a new key as `api_key.created`, the operator's as `api_key.issued`.
  "api_key.created": "api_key.issued"
}

/** An action as stored: a retired name is read as the act's name. */
const StoredAction = Schema.Union([
  Action,
  ...Object.entries(retired).map(([name, current]) => Schema.Literal(name).transform(current))
])

/** Every name `action` may be stored under: itself (or the act a retired name stands for) and its retired names. */
const storedNames = (action: string): ReadonlyArray<string> => {
  // Own keys only: a filter typed by anyone (`__proto__`, `constructor`) must not read the prototype.
  const current = (Object.hasOwn(retired, action) ? retired[action] : undefined) ?? action
  return [current, ...Object.keys(retired).filter((name) => retired[name] === current)]
}

/** A row of `audit_log` with its application's name. */
const EntryRow = Schema.Struct({
  id: Columns.Integer,
  at: Columns.Timestamp,
  actor: Schema.String,
  action: StoredAction,
  application_id: Schema.NullOr(Ids.ApplicationId),
  application_name: Schema.NullOr(Schema.String),
  target: Schema.NullOr(Schema.String),
  details: Columns.Json(Schema.Record(Schema.String, Schema.Unknown)),
  ip: Schema.NullOr(Schema.String)
})

const ActionRow = Schema.Struct({ action: StoredAction })

export interface Actor {
  /** The user's e-mail address, or "admin token". */
  readonly label: string
  readonly userId: Ids.UserId | null
  readonly ip: string | null
}

export interface Entry {
  readonly action: Action
  readonly applicationId?: Ids.ApplicationId | null | undefined
  /** The object acted on: a key, delivery, payment or user id. */
  readonly target?: string | null | undefined
  /** What changed; never a secret. */
  readonly details?: Readonly<Record<string, unknown>> | undefined
}

/** An entry as read back: every field is there. */
export interface Recorded {
  readonly action: Action
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
    readonly actions: Effect.Effect<ReadonlyArray<Action>>
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
          if (query.action !== undefined) {
            const names = storedNames(query.action)
            clauses.push(names.length === 1 ? sql`l.action = ${names[0]}` : sql`l.action IN ${sql.in(names)}`)
          }
          if (query.before !== undefined) clauses.push(sql`l.id < ${query.before}`)
          return Columns.all(EntryRow)(sql`
            SELECT l.*, a.name AS application_name FROM audit_log l LEFT JOIN applications a ON a.id = l.application_id
            WHERE ${sql.and(clauses)}
            ORDER BY l.id DESC LIMIT ${query.limit + 1}
          `).pipe(
            Effect.orDie,
            Effect.map((rows) => ({
              hasMore: rows.length > query.limit,
              entries: rows.slice(0, query.limit).map(
                (row): Recorded => ({
                  id: row.id,
                  at: row.at,
                  actor: row.actor,
                  action: row.action,
                  applicationId: row.application_id,
                  applicationName: row.application_name,
                  target: row.target,
                  details: row.details,
                  ip: row.ip
                })
              )
            }))
          )
        },
        // The distinct actions by the action index, one index probe per action (PostgreSQL has no skip scan):
        // `SELECT DISTINCT` would read every entry of a log that only grows, on every view of its page.
        actions: Columns.all(ActionRow)(sql`
          WITH RECURSIVE found AS (
            SELECT min(action) AS action FROM audit_log
            UNION ALL
            SELECT (SELECT min(action) FROM audit_log WHERE action > found.action) FROM found WHERE found.action IS NOT NULL
          )
          SELECT action FROM found WHERE action IS NOT NULL
        `).pipe(
          Effect.orDie,
          // A retired name and the act's name are one action.
          Effect.map((rows) => [...new Set(rows.map((row) => row.action))].sort())
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

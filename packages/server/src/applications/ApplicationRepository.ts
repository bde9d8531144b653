/**
 * Applications and their settings in PostgreSQL. Webhook secrets are sealed (SecretBox) before they are
 * written and opened only where an attempt is signed or a secret is shown once.
 */

import { PgClient } from "@effect/sql-pg"
import { Application, Ids } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import * as SecretBox from "../security/SecretBox.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"

/** A row of `applications` as read: the operator view plus what only the server reads (no sealed secret). */
export const ApplicationRow = Schema.Struct({
  id: Ids.ApplicationId,
  name: Schema.String,
  status: Application.ApplicationStatus,
  methods: Columns.StringArray,
  currencies: Columns.StringArray,
  locale: Schema.String,
  min_amount: Columns.Integer,
  max_amount: Columns.Integer,
  return_url_host: Schema.NullOr(Schema.String),
  webhook_url: Schema.NullOr(Schema.String),
  ip_allowlist: Columns.StringArray,
  payment_ttl_seconds: Columns.Integer,
  rate_limit_per_minute: Columns.Integer,
  checkout_logo_url: Schema.NullOr(Schema.String),
  checkout_brand_color: Schema.NullOr(Schema.String),
  webhook_secret_rotated_at: Columns.NullableTimestamp,
  created_at: Columns.Timestamp
})
type ApplicationRow = typeof ApplicationRow.Type

/** An application as stored: the operator view plus what only the server reads. */
export interface StoredApplication extends ApplicationRow {}

/** The sealed webhook secrets of an application row (`webhookSecrets`, and the delivery engine's targets). */
export const SealedSecretsRow = Schema.Struct({
  webhook_secret_encrypted: Schema.String,
  previous_webhook_secret_encrypted: Schema.NullOr(Schema.String),
  webhook_secret_rotated_at: Columns.NullableTimestamp
})

/** Secrets of an application, opened: current first; the previous one while it still signs. */
export interface WebhookSecrets {
  readonly current: string
  readonly previous: { readonly secret: string; readonly rotatedAt: DateTime.Utc } | null
}

/** Opens the secrets of a {@link SealedSecretsRow} with `open` (SecretBox.open under the server's key). */
export const openSecrets = (row: typeof SealedSecretsRow.Type, open: (sealed: string) => string): WebhookSecrets => ({
  current: open(row.webhook_secret_encrypted),
  previous:
    row.previous_webhook_secret_encrypted === null || row.webhook_secret_rotated_at === null
      ? null
      : { secret: open(row.previous_webhook_secret_encrypted), rotatedAt: row.webhook_secret_rotated_at }
})

export type NewApplication = Omit<Application.Application, "id" | "created_at">

export type ApplicationUpdate = Partial<Omit<Application.Application, "id" | "created_at">>

/** The operator view of a stored application (no secrets). */
export const toApplication = ({ webhook_secret_rotated_at: _r, ...application }: StoredApplication) =>
  application satisfies Application.Application

export class ApplicationRepository extends Context.Service<
  ApplicationRepository,
  {
    readonly create: (input: NewApplication, webhookSecret: string) => Effect.Effect<StoredApplication>
    readonly find: (id: Ids.ApplicationId) => Effect.Effect<Option.Option<StoredApplication>>
    readonly list: Effect.Effect<ReadonlyArray<StoredApplication>>
    readonly update: (
      id: Ids.ApplicationId,
      changes: ApplicationUpdate
    ) => Effect.Effect<Option.Option<StoredApplication>>
    /**
     * Moves the status from `from` to `to` only if it is still `from` (compare and set): of two operators clicking at
     * once, one wins and the other is told. False when the status was no longer `from`.
     */
    readonly changeStatus: (
      id: Ids.ApplicationId,
      from: Application.ApplicationStatus,
      to: Application.ApplicationStatus
    ) => Effect.Effect<boolean>
    /** Replaces the webhook secret; the old one keeps signing for 24 h (decisions §7). */
    readonly rotateWebhookSecret: (id: Ids.ApplicationId, secret: string) => Effect.Effect<boolean>
    readonly webhookSecrets: (id: Ids.ApplicationId) => Effect.Effect<Option.Option<WebhookSecrets>>
  }
>()("@kassa/server/ApplicationRepository") {
  static readonly layer = Layer.effect(
    ApplicationRepository,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const pg = yield* PgClient.PgClient
      const { encryptionKey } = yield* ServerSecrets

      const findRow = SqlSchema.findOneOption({
        Request: Ids.ApplicationId,
        Result: ApplicationRow,
        execute: (id) => sql`SELECT * FROM applications WHERE id = ${id}`
      })
      const find = (id: Ids.ApplicationId): Effect.Effect<Option.Option<StoredApplication>> =>
        findRow(id).pipe(Effect.orDie)
      const listRows = SqlSchema.findAll({
        Request: Schema.Void,
        Result: ApplicationRow,
        execute: () => sql`SELECT * FROM applications ORDER BY created_at, id`
      })
      const findSecrets = SqlSchema.findOneOption({
        Request: Ids.ApplicationId,
        Result: SealedSecretsRow,
        execute: (id) => sql`
          SELECT webhook_secret_encrypted, previous_webhook_secret_encrypted, webhook_secret_rotated_at
          FROM applications WHERE id = ${id}
        `
      })

      const create = Effect.fn("ApplicationRepository.create")(function* (
        input: NewApplication,
        webhookSecret: string
      ) {
        const id = Ids.ApplicationId.make(crypto.randomUUID())
        const now = new Date(DateTime.toEpochMillis(yield* DateTime.now))
        yield* sql`
          INSERT INTO applications (id, name, status, methods, currencies, locale, min_amount, max_amount,
            return_url_host, webhook_url, webhook_secret_encrypted, ip_allowlist, payment_ttl_seconds,
            rate_limit_per_minute, checkout_logo_url, checkout_brand_color, created_at, updated_at)
          VALUES (${id}, ${input.name}, ${input.status}, ${pg.json([...input.methods])},
            ${pg.json([...input.currencies])}, ${input.locale}, ${input.min_amount}, ${input.max_amount},
            ${input.return_url_host}, ${input.webhook_url}, ${SecretBox.seal(encryptionKey, webhookSecret)},
            ${pg.json([...input.ip_allowlist])}, ${input.payment_ttl_seconds}, ${input.rate_limit_per_minute},
            ${input.checkout_logo_url}, ${input.checkout_brand_color}, ${now}, ${now})
        `.pipe(Effect.orDie)
        return Option.getOrThrow(yield* find(id))
      })

      const update = Effect.fn("ApplicationRepository.update")(function* (
        id: Ids.ApplicationId,
        changes: ApplicationUpdate
      ) {
        const now = new Date(DateTime.toEpochMillis(yield* DateTime.now))
        const columns: Record<string, unknown> = { updated_at: now }
        for (const [key, value] of Object.entries(changes)) {
          if (value === undefined) continue
          columns[key] = Array.isArray(value) ? pg.json(value) : value
        }
        yield* sql`UPDATE applications SET ${sql.update(columns)} WHERE id = ${id}`.pipe(Effect.orDie)
        return yield* find(id)
      })

      const rotateWebhookSecret = Effect.fn("ApplicationRepository.rotateWebhookSecret")(function* (
        id: Ids.ApplicationId,
        secret: string
      ) {
        const now = new Date(DateTime.toEpochMillis(yield* DateTime.now))
        const rows = yield* sql`
          UPDATE applications
          SET previous_webhook_secret_encrypted = webhook_secret_encrypted,
              webhook_secret_encrypted = ${SecretBox.seal(encryptionKey, secret)},
              webhook_secret_rotated_at = ${now}, updated_at = ${now}
          WHERE id = ${id}
          RETURNING id
        `.pipe(Effect.orDie)
        return rows.length > 0
      })

      const webhookSecrets = (id: Ids.ApplicationId) =>
        findSecrets(id).pipe(
          Effect.map(Option.map((row) => openSecrets(row, (sealed) => SecretBox.open(encryptionKey, sealed)))),
          Effect.orDie
        )

      return ApplicationRepository.of({
        create,
        find,
        list: listRows(undefined).pipe(Effect.orDie),
        update,
        changeStatus: (id, from, to) =>
          DateTime.now.pipe(
            Effect.flatMap(
              (now) => sql`
                UPDATE applications SET status = ${to}, updated_at = ${new Date(DateTime.toEpochMillis(now))}
                WHERE id = ${id} AND status = ${from} RETURNING 1
              `
            ),
            Effect.orDie,
            Effect.map((rows) => rows.length > 0)
          ),
        rotateWebhookSecret,
        webhookSecrets
      })
    })
  )
}

/** Decodes an id from a path, or none when it is not one. */
export const parseApplicationId = Schema.decodeUnknownOption(Ids.ApplicationId)

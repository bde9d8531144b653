/**
 * Applications and their settings in PostgreSQL. Webhook secrets are sealed (SecretBox) before they are
 * written and opened only where an attempt is signed or a secret is shown once.
 */

import { PgClient } from "@effect/sql-pg"
import { type Application, Ids } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as SecretBox from "../security/SecretBox.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"

/** An application as stored: the operator view plus what only the server reads. */
export interface StoredApplication extends Application.Application {
  readonly provider_account: string | null
  readonly webhook_secret_rotated_at: DateTime.Utc | null
}

/** Secrets of an application, opened: current first; the previous one while it still signs. */
export interface WebhookSecrets {
  readonly current: string
  readonly previous: { readonly secret: string; readonly rotatedAt: DateTime.Utc } | null
}

export type NewApplication = Omit<Application.Application, "id" | "created_at"> & {
  readonly provider_account?: string | null
}

export type ApplicationUpdate = Partial<Omit<Application.Application, "id" | "created_at">> & {
  readonly provider_account?: string | null
}

const toUtc = (value: unknown): DateTime.Utc => DateTime.makeUnsafe(value as Date)

/** A row of `applications` as the driver returns it (bigint amounts, Date timestamps). */
export const fromRow = (row: Record<string, unknown>): StoredApplication => ({
  id: Ids.ApplicationId.make(String(row.id)),
  name: String(row.name),
  status: row.status as Application.ApplicationStatus,
  methods: row.methods as ReadonlyArray<string>,
  currencies: row.currencies as ReadonlyArray<string>,
  locale: String(row.locale),
  min_amount: Number(row.min_amount),
  max_amount: Number(row.max_amount),
  return_url_host: (row.return_url_host as string | null) ?? null,
  webhook_url: (row.webhook_url as string | null) ?? null,
  ip_allowlist: row.ip_allowlist as ReadonlyArray<string>,
  payment_ttl_seconds: Number(row.payment_ttl_seconds),
  rate_limit_per_minute: Number(row.rate_limit_per_minute),
  provider_account: (row.provider_account as string | null) ?? null,
  webhook_secret_rotated_at: row.webhook_secret_rotated_at === null ? null : toUtc(row.webhook_secret_rotated_at),
  created_at: toUtc(row.created_at)
})

/** The operator view of a stored application (no provider internals, no secrets). */
export const toApplication = ({
  provider_account: _p,
  webhook_secret_rotated_at: _r,
  ...application
}: StoredApplication) => application satisfies Application.Application

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

      const find = (id: Ids.ApplicationId) =>
        sql`SELECT * FROM applications WHERE id = ${id}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), fromRow)),
          Effect.orDie
        )

      const create = Effect.fn("ApplicationRepository.create")(function* (
        input: NewApplication,
        webhookSecret: string
      ) {
        const id = Ids.ApplicationId.make(crypto.randomUUID())
        const now = new Date(DateTime.toEpochMillis(yield* DateTime.now))
        yield* sql`
          INSERT INTO applications (id, name, status, methods, currencies, locale, min_amount, max_amount,
            return_url_host, webhook_url, webhook_secret_encrypted, ip_allowlist, payment_ttl_seconds,
            rate_limit_per_minute, provider_account, created_at, updated_at)
          VALUES (${id}, ${input.name}, ${input.status}, ${pg.json([...input.methods])},
            ${pg.json([...input.currencies])}, ${input.locale}, ${input.min_amount}, ${input.max_amount},
            ${input.return_url_host}, ${input.webhook_url}, ${SecretBox.seal(encryptionKey, webhookSecret)},
            ${pg.json([...input.ip_allowlist])}, ${input.payment_ttl_seconds}, ${input.rate_limit_per_minute},
            ${input.provider_account ?? null}, ${now}, ${now})
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
        sql`
          SELECT webhook_secret_encrypted, previous_webhook_secret_encrypted, webhook_secret_rotated_at
          FROM applications WHERE id = ${id}
        `.pipe(
          Effect.orDie,
          Effect.map((rows) =>
            Option.map(
              Option.fromNullishOr(rows[0]),
              (row): WebhookSecrets => ({
                current: SecretBox.open(encryptionKey, String(row.webhook_secret_encrypted)),
                previous:
                  row.previous_webhook_secret_encrypted === null || row.webhook_secret_rotated_at === null
                    ? null
                    : {
                        secret: SecretBox.open(encryptionKey, String(row.previous_webhook_secret_encrypted)),
                        rotatedAt: toUtc(row.webhook_secret_rotated_at)
                      }
              })
            )
          )
        )

      return ApplicationRepository.of({
        create,
        find,
        list: sql`SELECT * FROM applications ORDER BY created_at, id`.pipe(
          Effect.map((rows) => rows.map(fromRow)),
          Effect.orDie
        ),
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

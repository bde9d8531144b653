/**
 * Provider links (issue 12 §2, decisions §10, §11): the provider account an operator linked to an application. Rows
 * are decoded with SqlSchema; the secret key and the webhook endpoint's signing secret are sealed with SecretBox under
 * the server's encryption key before they are written, and opened only to build a {@link LinkAccess} for a provider
 * call. The key's display form is the only form ever shown again. A provider whose webhook is named on each payment
 * (Mollie) has no endpoint: its link has neither an endpoint id nor a secret (0012_mollie_links).
 */
import { Ids, Text } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import * as SecretBox from "../security/SecretBox.ts"
import { ServerSecrets } from "../security/ServerSecrets.ts"
import { type LinkAccess, ProviderLinkId, ProviderName } from "./ProviderConnector.ts"

export const LinkStatus = Schema.Literals(["active", "retired"])
export type LinkStatus = typeof LinkStatus.Type

/** A row of `provider_links` (timestamps through the shared column schemas, database/Columns.ts). */
const LinkRow = Schema.Struct({
  id: ProviderLinkId,
  application_id: Ids.ApplicationId,
  provider: ProviderName,
  account_id: Schema.String,
  livemode: Schema.Boolean,
  key_display: Schema.String,
  secret_key_encrypted: Schema.String,
  webhook_endpoint_id: Schema.NullOr(Schema.String),
  webhook_secret_encrypted: Schema.NullOr(Schema.String),
  status: LinkStatus,
  linked_at: Columns.Timestamp,
  retired_at: Columns.NullableTimestamp,
  endpoint_retired_at: Columns.NullableTimestamp
})
type LinkRow = typeof LinkRow.Type

/** A link as the server holds it: what can be shown, and its secrets still sealed. */
export interface StoredLink {
  readonly id: ProviderLinkId
  readonly applicationId: Ids.ApplicationId
  readonly provider: ProviderName
  readonly accountId: string
  readonly livemode: boolean
  readonly keyDisplay: string
  /** Null for a provider with no endpoint (Mollie). */
  readonly webhookEndpointId: string | null
  readonly status: LinkStatus
  readonly linkedAt: DateTime.Utc
  readonly retiredAt: DateTime.Utc | null
  readonly endpointRetiredAt: DateTime.Utc | null
  readonly sealed: { readonly secretKey: string; readonly endpointSecret: string | null }
}

const toStored = (row: LinkRow): StoredLink => ({
  id: row.id,
  applicationId: row.application_id,
  provider: row.provider,
  accountId: row.account_id,
  livemode: row.livemode,
  keyDisplay: row.key_display,
  webhookEndpointId: row.webhook_endpoint_id,
  status: row.status,
  linkedAt: row.linked_at,
  retiredAt: row.retired_at,
  endpointRetiredAt: row.endpoint_retired_at,
  sealed: { secretKey: row.secret_key_encrypted, endpointSecret: row.webhook_secret_encrypted }
})

/** The link of decisions §10 and §11 as the operator API, the CLI and the dashboard show it. */
export const toView = (link: StoredLink) => ({
  provider: link.provider,
  account_id: link.accountId,
  key_display: link.keyDisplay,
  livemode: link.livemode,
  webhook_endpoint_id: link.webhookEndpointId,
  status: link.status,
  linked_at: link.linkedAt,
  retired_at: link.retiredAt
})

/**
 * `rk_live_…wxyz` (Stripe), `live_…wxyz` (Mollie): the key's kind and mode, and its last four characters (what the
 * providers' dashboards show), enough to tell two keys apart and nothing to use.
 */
export const keyDisplay = (key: string): string => {
  const prefix = /^(?:[a-z]{2}_)?(?:live|test)_/.exec(key)?.[0] ?? ""
  return `${prefix}…${key.slice(-4)}`
}

export interface NewLink {
  readonly id: ProviderLinkId
  readonly applicationId: Ids.ApplicationId
  readonly provider: ProviderName
  readonly accountId: string
  readonly livemode: boolean
  readonly secretKey: Redacted.Redacted<string>
  /** The provider's endpoint for this link's events; none for a provider whose webhook is named per payment. */
  readonly endpoint: Option.Option<{
    readonly id: string
    readonly secret: Redacted.Redacted<string>
  }>
}

export class ProviderLinks extends Context.Service<
  ProviderLinks,
  {
    /** The application's active link, if any. */
    readonly active: (applicationId: Ids.ApplicationId) => Effect.Effect<Option.Option<StoredLink>>
    readonly find: (id: ProviderLinkId) => Effect.Effect<Option.Option<StoredLink>>
    /**
     * Stores a new active link and retires the previous one, in one transaction under the application's row lock
     * (two links racing: one after the other, never two active). Answers the new link and the one it retired.
     */
    readonly link: (
      input: NewLink
    ) => Effect.Effect<{ readonly link: StoredLink; readonly retired: Option.Option<StoredLink> }>
    /** Retires the application's active link; none when there was none. */
    readonly retire: (applicationId: Ids.ApplicationId) => Effect.Effect<Option.Option<StoredLink>>
    /** The provider confirmed the link's webhook endpoint is gone. */
    readonly endpointRetired: (id: ProviderLinkId) => Effect.Effect<void>
    /** What a provider call with this link needs; its secrets are opened only when the call needs them. */
    readonly access: (link: StoredLink) => LinkAccess
  }
>()("@kassa/server/providers/ProviderLinks") {
  static readonly layer = Layer.effect(
    ProviderLinks,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { encryptionKey } = yield* ServerSecrets

      const decodeAll = (execute: () => Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
        SqlSchema.findAll({ Request: Schema.Void, Result: LinkRow, execute })(undefined).pipe(
          // A row that does not decode is a broken database, not a request error.
          Effect.orDie,
          Effect.map((rows) => rows.map(toStored))
        )
      const first = (execute: () => Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
        Effect.map(decodeAll(execute), (links) => Option.fromNullishOr(links[0]))

      const now = Effect.map(DateTime.now, (time) => new Date(DateTime.toEpochMillis(time)))

      const retireActive = (applicationId: Ids.ApplicationId, at: Date) =>
        first(
          () => sql`
            UPDATE provider_links SET status = 'retired', retired_at = ${at}
            WHERE application_id = ${applicationId} AND status = 'active'
            RETURNING *
          `
        )

      return ProviderLinks.of({
        active: (applicationId) =>
          first(() => sql`SELECT * FROM provider_links WHERE application_id = ${applicationId} AND status = 'active'`),
        find: (id) => first(() => sql`SELECT * FROM provider_links WHERE id = ${id}`),
        link: Effect.fn("ProviderLinks.link")(function* (input: NewLink) {
          const at = yield* now
          return yield* sql
            .withTransaction(
              Effect.gen(function* () {
                yield* sql`SELECT id FROM applications WHERE id = ${input.applicationId} FOR UPDATE`
                const retired = yield* retireActive(input.applicationId, at)
                const link = yield* first(
                  () => sql`
                    INSERT INTO provider_links (id, application_id, provider, account_id, livemode, key_display,
                      secret_key_encrypted, webhook_endpoint_id, webhook_secret_encrypted, status, linked_at)
                    VALUES (${input.id}, ${input.applicationId}, ${input.provider}, ${Text.toStorable(input.accountId)},
                      ${input.livemode}, ${keyDisplay(Redacted.value(input.secretKey))},
                      ${SecretBox.seal(encryptionKey, Redacted.value(input.secretKey))},
                      ${Option.match(input.endpoint, { onNone: () => null, onSome: (endpoint) => Text.toStorable(endpoint.id) })},
                      ${Option.match(input.endpoint, {
                        onNone: () => null,
                        onSome: (endpoint) => SecretBox.seal(encryptionKey, Redacted.value(endpoint.secret))
                      })}, 'active', ${at})
                    RETURNING *
                  `
                )
                return { link: Option.getOrThrow(link), retired }
              })
            )
            .pipe(Effect.orDie)
        }),
        retire: Effect.fn("ProviderLinks.retire")(function* (applicationId: Ids.ApplicationId) {
          return yield* retireActive(applicationId, yield* now)
        }),
        endpointRetired: (id) =>
          Effect.flatMap(now, (at) =>
            sql`UPDATE provider_links SET endpoint_retired_at = ${at} WHERE id = ${id}`.pipe(
              Effect.orDie,
              Effect.asVoid
            )
          ),
        access: (link) => ({
          id: link.id,
          secretKey: Effect.sync(() => Redacted.make(SecretBox.open(encryptionKey, link.sealed.secretKey))),
          endpointSecret: Effect.suspend(() => {
            const sealed = link.sealed.endpointSecret
            // Only a connector with endpoints asks for it, and only for its own links.
            return sealed === null
              ? Effect.die(new Error(`provider link ${link.id} has no webhook endpoint secret`))
              : Effect.sync(() => Redacted.make(SecretBox.open(encryptionKey, sealed)))
          })
        })
      })
    })
  )
}

/**
 * `kassa secrets reencrypt` (issue 14 §2): after KASSA_SECRET_KEY changed with the old value in
 * KASSA_SECRET_KEY_PREVIOUS, re-seals every value sealed under the previous key — applications' webhook secrets
 * (current and previous) and provider links' secret keys and endpoint secrets — under the current one. Values
 * already under the current key are left alone, so it may run again, and while servers are serving. API keys are
 * one-way hashes and cannot be re-hashed without the key: each is re-hashed on its first use (ApiKeyRepository).
 */
import { Ids } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import * as SecretBox from "./SecretBox.ts"
import { ServerSecrets } from "./ServerSecrets.ts"

/** A table holding sealed values: its id, and a row of its sealed columns (null where a value is optional). */
interface SealedTable {
  readonly table: string
  readonly Id: Schema.ConstraintDecoder<string>
  readonly Sealed: Schema.ConstraintDecoder<Readonly<Record<string, string | null>>>
}

/** The sealed columns, by table. */
const sealedTables: ReadonlyArray<SealedTable> = [
  {
    table: "applications",
    Id: Ids.ApplicationId,
    Sealed: Schema.Struct({
      webhook_secret_encrypted: Schema.String,
      previous_webhook_secret_encrypted: Schema.NullOr(Schema.String)
    })
  },
  {
    table: "provider_links",
    Id: Ids.ProviderLinkId,
    Sealed: Schema.Struct({ secret_key_encrypted: Schema.String, webhook_secret_encrypted: Schema.String })
  }
]

export interface ReencryptSummary {
  /** Values re-sealed under the current key, by `table.column`. */
  readonly resealed: Readonly<Record<string, number>>
}

/** Re-seals, row by row (one short transaction each, the row locked), what the previous key sealed. */
export const reencrypt = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { encryptionKey } = yield* ServerSecrets
  const resealed: Record<string, number> = {}
  for (const { table, Id, Sealed } of sealedTables) {
    const ids = yield* Columns.all(Schema.Struct({ id: Id }))(sql`SELECT id FROM ${sql(table)} ORDER BY id`)
    for (const { id } of ids) {
      yield* sql.withTransaction(
        Effect.gen(function* () {
          // The row decoded holds only its sealed columns.
          const row = yield* Columns.first(Sealed)(sql`SELECT * FROM ${sql(table)} WHERE id = ${id} FOR UPDATE`)
          if (Option.isNone(row)) return
          for (const [column, value] of Object.entries(row.value)) {
            const stored = Option.fromNullishOr(value)
            if (Option.isNone(stored) || SecretBox.sealedUnder(encryptionKey, stored.value)) continue
            // Opens under the previous key (or throws: a value neither key opens is a wrong setting, a defect).
            const plain = SecretBox.open(encryptionKey, stored.value)
            yield* sql`UPDATE ${sql(table)} SET ${sql(column)} = ${SecretBox.seal(encryptionKey, plain)} WHERE id = ${id}`
            resealed[`${table}.${column}`] = (resealed[`${table}.${column}`] ?? 0) + 1
          }
        })
      )
    }
  }
  return { resealed } satisfies ReencryptSummary
}).pipe(
  // A row that does not decode is a broken database, not something to re-seal around.
  Effect.catchTag("SchemaError", Effect.die)
)

/**
 * `kassa secrets reencrypt` (issue 14 §2): after KASSA_SECRET_KEY changed with the old value in
 * KASSA_SECRET_KEY_PREVIOUS, re-seals every value sealed under the previous key — applications' webhook secrets
 * (current and previous) and provider links' secret keys and endpoint secrets — under the current one. Values
 * already under the current key are left alone, so it may run again, and while servers are serving. API keys are
 * one-way hashes and cannot be re-hashed without the key: each is re-hashed on its first use (ApiKeyRepository).
 */
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as SecretBox from "./SecretBox.ts"
import { ServerSecrets } from "./ServerSecrets.ts"

/** The sealed columns, by table. */
const sealedColumns = [
  { table: "applications", columns: ["webhook_secret_encrypted", "previous_webhook_secret_encrypted"] },
  { table: "provider_links", columns: ["secret_key_encrypted", "webhook_secret_encrypted"] }
] as const

export interface ReencryptSummary {
  /** Values re-sealed under the current key, by `table.column`. */
  readonly resealed: Readonly<Record<string, number>>
}

/** Re-seals, row by row (one short transaction each, the row locked), what the previous key sealed. */
export const reencrypt = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { encryptionKey } = yield* ServerSecrets
  const resealed: Record<string, number> = {}
  for (const { table, columns } of sealedColumns) {
    const ids = yield* sql<{ readonly id: string }>`SELECT id FROM ${sql(table)} ORDER BY id`
    for (const { id } of ids) {
      yield* sql.withTransaction(
        Effect.gen(function* () {
          const rows = yield* sql<
            Record<string, string | null>
          >`SELECT * FROM ${sql(table)} WHERE id = ${id} FOR UPDATE`
          const row = rows[0]
          if (row === undefined) return
          for (const column of columns) {
            const stored = Option.fromNullishOr(row[column])
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
})

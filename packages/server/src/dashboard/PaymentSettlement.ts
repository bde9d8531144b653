/**
 * How a payment was settled, for its page (issue 22 §3): `payments.settled_via`, written with the status change, and
 * the dashboard member whose audit entry records a simulate or cancel of it. One statement by primary key; the audit
 * entry is one probe of its partial index (`audit_log_payment_settlements`, migration 0017), never a walk through
 * the application's log. Read-only.
 */
import { SettlementSource } from "@kassa/core"
import { Effect, Option, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import * as Columns from "../database/Columns.ts"

const SettlementRow = Schema.Struct({
  settled_via: Schema.NullOr(SettlementSource.SettlementSource),
  actor: Schema.NullOr(Schema.String)
})

export interface Settlement {
  readonly via: SettlementSource.SettlementSource | null
  /** Who, when a dashboard member did it and the audit log has the entry. */
  readonly by: string | null
}

export const settlementOf = (sql: SqlClient.SqlClient, paymentId: string): Effect.Effect<Settlement> =>
  Columns.first(SettlementRow)(sql`
    SELECT p.settled_via, (
      SELECT a.actor FROM audit_log a
      WHERE a.target = p.id::text AND a.action IN ('payment.simulated', 'payment.cancelled')
      ORDER BY a.id DESC
      LIMIT 1
    ) AS actor
    FROM payments p
    WHERE p.id = ${paymentId}
  `).pipe(
    Effect.map(
      Option.match({
        onNone: (): Settlement => ({ via: null, by: null }),
        onSome: (row): Settlement => ({
          via: row.settled_via,
          by: row.settled_via !== null && SettlementSource.byDashboardMember.has(row.settled_via) ? row.actor : null
        })
      })
    ),
    Effect.orDie
  )

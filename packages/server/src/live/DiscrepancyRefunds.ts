/**
 * The one-click full refund of money a closed payment took at its provider (decisions §11 "paid after cancel",
 * issue 21 §5): a `paid_after_final` discrepancy — the customer paid at the provider after Kassa had cancelled,
 * expired or failed the payment — is refunded in full at the provider by an operator (a person decides, as for every
 * live refund). Kassa's payment stays as it is: the merchant was told it ended unpaid, and it did, for them.
 *
 * The refund's id is derived from the discrepancy, so it is the provider's Idempotency-Key and metadata: a second
 * click, or a retry after no answer, makes no second refund, and when the provider later reports the refund it carries
 * Kassa's id (not one "made at the provider"). The discrepancy is resolved with the provider's answer
 * (`provider_discrepancies.resolution`); a refusal (Mollie's duplicate within the hour…) is shown in words.
 */
import { createHash } from "node:crypto"
import { Ids, Money } from "@kassa/core"
import { Context, DateTime, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import * as Columns from "../database/Columns.ts"
import { ProviderLinkId, providerTitles } from "../providers/ProviderConnector.ts"
import { ProviderConnectors } from "../providers/ProviderConnectors.ts"
import { ProviderLinks } from "../providers/ProviderLinks.ts"

export type DiscrepancyRefund =
  | { readonly _tag: "Refunded"; readonly resolution: string }
  | { readonly _tag: "NotRefundable"; readonly message: string }
  | { readonly _tag: "NoAnswer"; readonly message: string }
  | { readonly _tag: "Refused"; readonly message: string }

const TargetRow = Schema.Struct({
  kind: Schema.String,
  resolved_at: Columns.NullableTimestamp,
  payment_id: Ids.PaymentId,
  application_id: Ids.ApplicationId,
  status: Schema.String,
  amount: Columns.Integer,
  currency: Schema.String,
  link_id: Schema.NullOr(ProviderLinkId),
  provider_payment_id: Schema.NullOr(Schema.String)
})

/** A refund id (a UUID, version 8: derived) that only this discrepancy has. */
export const refundIdOf = (discrepancyId: number, paymentId: Ids.PaymentId): Ids.RefundId => {
  const hex = createHash("sha256").update(`kassa:discrepancy-refund:${discrepancyId}:${paymentId}`).digest("hex")
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16)
  return Ids.RefundId.make(
    `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
  )
}

export class DiscrepancyRefunds extends Context.Service<
  DiscrepancyRefunds,
  {
    /** Refunds the payment's whole amount at its provider and resolves the discrepancy; none when there is none. */
    readonly refund: (discrepancyId: number) => Effect.Effect<
      Option.Option<{
        readonly outcome: DiscrepancyRefund
        readonly paymentId: Ids.PaymentId
        readonly applicationId: Ids.ApplicationId
      }>
    >
  }
>()("@kassa/server/live/DiscrepancyRefunds") {
  static readonly layer = Layer.effect(
    DiscrepancyRefunds,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const links = yield* ProviderLinks
      const connectors = yield* ProviderConnectors
      const target = SqlSchema.findOneOption({
        Request: Schema.Number,
        Result: TargetRow,
        execute: (id) => sql`
          SELECT d.kind, d.resolved_at, d.payment_id, p.application_id, p.status, p.amount, p.currency,
                 pp.link_id, pp.provider_payment_id
          FROM provider_discrepancies d
          JOIN payments p ON p.id = d.payment_id
          LEFT JOIN provider_payments pp ON pp.payment_id = d.payment_id
          WHERE d.id = ${id}
        `
      })

      const refund = Effect.fn("DiscrepancyRefunds.refund")(function* (discrepancyId: number) {
        const found = yield* target(discrepancyId).pipe(Effect.orDie)
        if (Option.isNone(found)) return Option.none()
        const row = found.value
        const answer = (outcome: DiscrepancyRefund) =>
          Option.some({ outcome, paymentId: row.payment_id, applicationId: row.application_id })
        if (row.kind !== "paid_after_final" || row.resolved_at !== null) {
          return answer({
            _tag: "NotRefundable",
            message: "Only an open 'paid after final' discrepancy is refunded here."
          })
        }
        const link = row.link_id === null ? Option.none() : yield* links.find(row.link_id)
        if (Option.isNone(link) || row.provider_payment_id === null) {
          return answer({
            _tag: "NotRefundable",
            message: "Kassa does not know the payment at the provider yet: read it from the provider first."
          })
        }
        const provider = providerTitles[link.value.provider]
        const refundId = refundIdOf(discrepancyId, row.payment_id)
        const said = yield* connectors
          .of(link.value.provider)
          .refund(links.access(link.value), {
            refundId,
            providerPaymentId: row.provider_payment_id,
            amount: row.amount,
            currency: row.currency
          })
          .pipe(Effect.result)
        if (said._tag === "Failure") {
          return answer({ _tag: "Refused", message: `${provider} refused the refund: ${said.failure.message}` })
        }
        if (said.success._tag === "NoAnswer") {
          return answer({
            _tag: "NoAnswer",
            message: `${provider} did not answer (${said.success.reason}); refunding again is safe: it makes no second refund.`
          })
        }
        const { refund: made } = said.success
        const resolution = `Refunded ${Money.formatPlain(row.amount, row.currency)} at ${provider} (${made.provider_refund_id}, ${made.status}).`
        const now = yield* DateTime.now
        yield* sql`
          UPDATE provider_discrepancies SET resolved_at = ${Columns.toDate(now)}, resolution = ${resolution}
          WHERE id = ${discrepancyId} AND resolved_at IS NULL
        `.pipe(Effect.orDie)
        return answer({ _tag: "Refunded", resolution })
      })

      return DiscrepancyRefunds.of({ refund })
    })
  )
}

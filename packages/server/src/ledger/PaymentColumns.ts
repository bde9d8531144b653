/**
 * The columns of `payments` a create writes, in the order its INSERT names them: the create's INSERT
 * (PaymentInserts) and the seeds of tests and benches (test/support/PaymentSeed) name them from here. No imports, so
 * that the bench's bare baseline, which seeds through PaymentSeed, loads nothing of Kassa's with it.
 */
/** The columns a create's INSERT sets (PaymentInserts): every column of `payments` but `seq`. */
export const insertColumns = [
  "id",
  "application_id",
  "mode",
  "status",
  "amount",
  "refunded_amount",
  "currency",
  "method",
  "order_reference",
  "description",
  "customer",
  "payer",
  "locale",
  "return_url",
  "metadata",
  "expires_at",
  "paid_at",
  "created_at",
  "updated_at",
  "idempotency_key",
  "settled_via"
] as const

/**
 * The ledger as one layer: payment rows, the event outbox, idempotency records and the write kernel over them.
 * Needs the database (`SqlClient`, `PgClient`), `ServerConfig` and the delivery engine's `DeliveryWakeup`.
 */
import { Layer } from "effect"
import { EventOutbox } from "./EventOutbox.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import { PaymentRepository } from "./PaymentRepository.ts"
import { PaymentWrites } from "./PaymentWrites.ts"

export const layer = PaymentWrites.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(PaymentRepository.layer, EventOutbox.layer, IdempotencyStore.layer))
)

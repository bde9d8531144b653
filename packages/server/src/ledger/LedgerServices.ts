/**
 * The ledger as one layer: payment rows, the event outbox and its read side, idempotency records and the write kernel
 * over them.
 * Needs the database (`SqlClient`, `PgClient`), `ServerConfig` and the delivery engine's `DeliveryWakeup`.
 */
import { Layer } from "effect"
import { EventLog } from "./EventLog.ts"
import { EventOutbox } from "./EventOutbox.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import { PaymentRepository } from "./PaymentRepository.ts"
import { PaymentWrites } from "./PaymentWrites.ts"

export const layer = PaymentWrites.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(PaymentRepository.layer, EventOutbox.layer, EventLog.layer, IdempotencyStore.layer))
)

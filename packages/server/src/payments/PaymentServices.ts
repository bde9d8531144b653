/**
 * Everything payments need, as one layer: the service, its repository, the event outbox, the provider boundary,
 * idempotency keys and the expiry sweeper (whose fiber lives as long as the layer). Needs the database
 * (`SqlClient`, `PgClient`), `ApplicationRepository`, `ServerConfig` and `SecureRandom`.
 */
import { Layer } from "effect"
import { EventOutbox } from "./EventOutbox.ts"
import { ExpirySweeper } from "./ExpirySweeper.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import { PaymentProvider } from "./PaymentProvider.ts"
import { PaymentRepository } from "./PaymentRepository.ts"
import { Payments } from "./Payments.ts"

export const layer = ExpirySweeper.layer.pipe(
  Layer.provideMerge(Payments.layer),
  Layer.provideMerge(
    Layer.mergeAll(PaymentRepository.layer, EventOutbox.layer, PaymentProvider.layer, IdempotencyStore.layer)
  )
)

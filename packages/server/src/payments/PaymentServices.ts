/**
 * Everything payments need, as one layer: the service, its repository, the event outbox, idempotency keys and the
 * expiry sweeper (whose fiber lives as long as the layer). Needs the database (`SqlClient`, `PgClient`),
 * `ApplicationRepository`, `ServerConfig`, `SecureRandom` and the provider boundary (`PaymentProvider`), which the
 * server provides so that tests can put a recording provider in its place.
 */
import { Layer } from "effect"
import { LiveCheckouts } from "../providers/LiveCheckouts.ts"
import { EventOutbox } from "./EventOutbox.ts"
import { ExpirySweeper } from "./ExpirySweeper.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import { PaymentRepository } from "./PaymentRepository.ts"
import { Payments } from "./Payments.ts"

export const layer = ExpirySweeper.layer.pipe(
  Layer.provideMerge(Payments.layer),
  Layer.provideMerge(
    Layer.mergeAll(PaymentRepository.layer, EventOutbox.layer, IdempotencyStore.layer, LiveCheckouts.layer)
  )
)

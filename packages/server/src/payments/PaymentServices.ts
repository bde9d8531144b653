/**
 * Everything payments need, as one layer: the service, its repository, the event outbox, idempotency keys, live
 * checkouts, the expiry sweeper and the provider reconciler (whose fibers live as long as the layer). Needs the
 * database (`SqlClient`, `PgClient`), `ApplicationRepository`, `ServerConfig`, `SecureRandom`, the provider links
 * and connector, and the provider boundary (`PaymentProvider`), which the
 * server provides so that tests can put a recording provider in its place.
 */
import { Layer } from "effect"
import { LiveCheckouts } from "../providers/LiveCheckouts.ts"
import { ProviderReconciler } from "../providers/ProviderReconciler.ts"
import { EventOutbox } from "./EventOutbox.ts"
import { ExpirySweeper } from "./ExpirySweeper.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import { PaymentRepository } from "./PaymentRepository.ts"
import { Payments } from "./Payments.ts"

export const layer = Layer.mergeAll(ExpirySweeper.layer, ProviderReconciler.layer).pipe(
  Layer.provideMerge(Payments.layer),
  Layer.provideMerge(
    Layer.mergeAll(PaymentRepository.layer, EventOutbox.layer, IdempotencyStore.layer, LiveCheckouts.layer)
  )
)

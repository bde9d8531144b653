/**
 * The webhook delivery engine as one layer: the dispatcher (and its fibers), its repository, the HTTP sender and the
 * wake-up signal the event outbox calls after a commit. Needs the database (`SqlClient`, `PgClient`), `ServerConfig`,
 * `ServerSecrets` and `Mac`.
 */
import { Layer } from "effect"
import { DeliveryRepository } from "./DeliveryRepository.ts"
import { DeliveryWakeup } from "./DeliveryWakeup.ts"
import { Dispatcher } from "./Dispatcher.ts"
import { WebhookSender } from "./WebhookSender.ts"

export const layer = Dispatcher.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(DeliveryRepository.layer, WebhookSender.layer, DeliveryWakeup.layer))
)

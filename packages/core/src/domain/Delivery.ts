import { Schema } from "effect"

/** Where a webhook delivery stands: still scheduled, delivered, or given up on. */
export const DeliveryStatus = Schema.Literals(["pending", "succeeded", "failed"])
export type DeliveryStatus = typeof DeliveryStatus.Type

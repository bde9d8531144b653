/**
 * The provider boundary as one layer: the connectors by provider (ProviderConnectors: Stripe to
 * `KASSA_STRIPE_API_URL`, Mollie to `KASSA_MOLLIE_API_URL`), the provider links and the linking that uses both (and
 * audits every attempt). Needs the settings, the database and the server's secrets.
 */
import { Layer } from "effect"
import { AuditLog } from "../audit/AuditLog.ts"
import { ProviderConnectors } from "./ProviderConnectors.ts"
import { ProviderLinking } from "./ProviderLinking.ts"
import { ProviderLinks } from "./ProviderLinks.ts"

export const layer = ProviderLinking.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(ProviderLinks.layer, ProviderConnectors.layer, AuditLog.layer))
)

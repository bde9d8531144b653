/**
 * The provider boundary as one layer: the Stripe connector (to `KASSA_STRIPE_API_URL`), the provider links and the
 * linking that uses both. Needs the settings, the database and the server's secrets.
 */
import { Layer } from "effect"
import { ProviderLinking } from "./ProviderLinking.ts"
import { ProviderLinks } from "./ProviderLinks.ts"
import * as StripeConnector from "./StripeConnector.ts"

export const layer = ProviderLinking.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(ProviderLinks.layer, StripeConnector.layer))
)

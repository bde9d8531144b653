/**
 * The live-provider services (issue 12): the Stripe connector (to `KASSA_STRIPE_API_URL`), the provider links and
 * the linking that uses both. Needs the settings, the database and the server's secrets.
 */
import { Layer } from "effect"
import { LiveRefunds } from "./LiveRefunds.ts"
import { ProviderLinking } from "./ProviderLinking.ts"
import { ProviderLinks } from "./ProviderLinks.ts"
import * as StripeConnector from "./StripeConnector.ts"

export const layer = ProviderLinking.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(ProviderLinks.layer, StripeConnector.layer))
)

/**
 * Live refunds and their background fiber. Separate from {@link layer} because they also need the payments'
 * repository and event outbox, which are built above the provider services (see KassaServer.servicesWith).
 */
export const refunds = LiveRefunds.layer

/**
 * Live mode's use cases as one layer: checkouts at the provider, the provider's answers, live creates and cancels,
 * live refunds, the refund of a discrepancy's money, and the reconciler (whose background fibers live as long as the layer). Needs the ledger
 * (ledger/LedgerServices.ts), the provider boundary (providers/ProviderServices.ts), `ServerConfig` and
 * `SecureRandom`.
 */
import { Layer } from "effect"
import { DiscrepancyRefunds } from "./DiscrepancyRefunds.ts"
import { LiveCheckouts } from "./LiveCheckouts.ts"
import { LivePayments } from "./LivePayments.ts"
import { LiveRefunds } from "./LiveRefunds.ts"
import { ProviderAnswers } from "./ProviderAnswers.ts"
import { ProviderReconciler } from "./ProviderReconciler.ts"

export const layer = Layer.mergeAll(
  LivePayments.layer,
  LiveRefunds.layer,
  ProviderReconciler.layer,
  DiscrepancyRefunds.layer
).pipe(Layer.provideMerge(ProviderAnswers.layer), Layer.provideMerge(LiveCheckouts.layer))

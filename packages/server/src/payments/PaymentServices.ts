/**
 * The merchant's payment operations as one layer: the API's operations, the hosted checkout's and the expiry
 * sweeper (whose fiber lives as long as the layer), over the given test-mode simulator (observed like a provider
 * call), which the server provides so that tests can put a recording one in its place. Needs the ledger and live
 * layers, `ApplicationRepository`, `ServerConfig` and `SecureRandom`.
 */
import { Layer } from "effect"
import { ExpirySweeper } from "./ExpirySweeper.ts"
import { HostedCheckout } from "./HostedCheckout.ts"
import { MerchantPayments } from "./MerchantPayments.ts"
import { Simulator } from "./Simulator.ts"

export const layerWith = (simulator: Layer.Layer<Simulator>) =>
  Layer.mergeAll(MerchantPayments.layer, HostedCheckout.layer, ExpirySweeper.layer).pipe(
    Layer.provide(Simulator.observed(simulator))
  )

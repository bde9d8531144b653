/**
 * Whether this process should be sent traffic: false from the moment a stop begins (SIGTERM), while requests in
 * flight still finish. `/readyz` answers 503 then, so a load balancer takes the instance out before it goes.
 */
import { Context, Layer } from "effect"

export interface ReadinessState {
  draining: boolean
}

export class Readiness extends Context.Service<Readiness, ReadinessState>()("@kassa/server/observability/Readiness") {
  /** A fresh state per server (tests run several servers in one process). */
  static readonly layer = Layer.sync(Readiness, () => ({ draining: false }))
}

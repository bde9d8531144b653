/**
 * What the live payment tests (LivePaymentsCreate, LivePaymentsOutcomes) share: a server over the database with the
 * stateful fake Stripe behind `KASSA_STRIPE_API_URL` and a shorter Stripe bound, reading a payment's
 * `provider_payments` row and its merchant events, and a reconciler round.
 */
import { Duration, Effect } from "effect"
import { ProviderReconciler } from "../../src/live/ProviderReconciler.ts"
import { apiVersion } from "../../src/providers/StripeConnector.ts"
import { type FakeStripe, startFakeStripe } from "./FakeStripe.ts"
import { eventsOf, query } from "./PaymentFixtures.ts"
import { type DatabaseKind, type RunningServer, startServer } from "./TestServer.ts"

/**
 * The server's Stripe bound in these files: 4 s instead of production's 10 s (`StripeConnector.callTimeout`, held by
 * StripeConnector.test), so the tests that wait for a call Stripe never answers wait less; long enough for a retry to
 * meet the first call in flight on a loaded machine.
 */
export const stripeBound = Duration.seconds(4)

/** The fake Stripe, and a server over the database that calls it within `stripeBound`. */
export const startLiveServer = async (database: DatabaseKind): Promise<{ fake: FakeStripe; server: RunningServer }> => {
  const fake = await startFakeStripe({ apiVersion })
  const server = await startServer(database, { stripeApiUrl: fake.url }, { stripeCallTimeout: stripeBound })
  return { fake, server }
}

/** The payment's `provider_payments` row (its checkout at Stripe), if it has one. */
export const checkoutRowOf = async (server: RunningServer, paymentId: string) =>
  (await query(server, (sql) => sql`SELECT * FROM provider_payments WHERE payment_id = ${paymentId}`))[0]

/** The names of the merchant events the payment has had, oldest first. */
export const eventNamesOf = async (server: RunningServer, paymentId: string) =>
  (await eventsOf(server, paymentId)).map((event) => event.event)

/** One round of the server's provider reconciler, run now. */
export const reconcileOn = (server: RunningServer) =>
  server.run(Effect.flatMap(ProviderReconciler, (reconciler) => reconciler.reconcile))

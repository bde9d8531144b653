/**
 * The dashboards under `/dashboard` (issue #6): one route table per section, and the router built from them. Every
 * route goes through DashboardGuard's middleware, which provides what its permission says (DashboardRoute); the
 * handlers' services come from this layer. The same tables give the 405 answers (KassaServer's `knownRoutes`).
 *
 * | Path | Handler | Template (pages/dashboard/) |
 * |---|---|---|
 * | `/dashboard/login`, `/dashboard/logout` | SignIn | LoginPage |
 * | `/dashboard` | Home | HomePage |
 * | `/dashboard/account` | Account | AccountPage |
 * | `/dashboard/assets/…` | Assets | assets/ |
 * | `/dashboard/operator` | operator/Overview | OperatorOverview (charts: OverviewCharts, Charts) |
 * | `/dashboard/operator/applications…` | operator/Applications, operator/ProviderAccount | OperatorApplicationViews, OperatorProviderAccount |
 * | `/dashboard/operator/{deliveries,users,audit}` | operator/Deliveries, Users, Audit | OperatorViews |
 * | `/dashboard/operator/payments[.csv]` | operator/OperatorPayments, PaymentsCsv | OperatorPaymentList, PaymentFilterFields |
 * | `/dashboard/operator/provider` | operator/Provider | OperatorProvider |
 * | `/dashboard/apps/:id/payments[.csv]` | apps/PaymentList, PaymentsCsv | ApplicationPaymentList, PaymentFilterFields |
 * | `/dashboard/apps/:id/…` | apps/Overview, Keys, Webhooks, Deliveries, ApplicationPayments, Members | Application{Overview,Keys,…} |
 */
import { Context, Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import * as Account from "./Account.ts"
import * as Assets from "./Assets.ts"
import * as ApplicationPayments from "./apps/ApplicationPayments.ts"
import * as ApplicationDeliveries from "./apps/Deliveries.ts"
import * as Keys from "./apps/Keys.ts"
import * as Members from "./apps/Members.ts"
import * as Overview from "./apps/Overview.ts"
import * as PaymentList from "./apps/PaymentList.ts"
import * as Webhooks from "./apps/Webhooks.ts"
import { DashboardGuard } from "./DashboardGuard.ts"
import type { DashboardRoute, Response, ServicesOf } from "./DashboardRoute.ts"
import * as Home from "./Home.ts"
import { OperatorQueries } from "./OperatorQueries.ts"
import * as Applications from "./operator/Applications.ts"
import * as Audit from "./operator/Audit.ts"
import * as OperatorDeliveries from "./operator/Deliveries.ts"
import * as OperatorPayments from "./operator/OperatorPayments.ts"
import * as OperatorOverview from "./operator/Overview.ts"
import * as Provider from "./operator/Provider.ts"
import * as ProviderAccount from "./operator/ProviderAccount.ts"
import * as Users from "./operator/Users.ts"
import * as SignIn from "./SignIn.ts"

/** The operator's pages, for operator admins only. */
export const operatorRoutes = [
  ...OperatorOverview.routes,
  ...Applications.routes,
  ...ProviderAccount.routes,
  ...OperatorDeliveries.routes,
  ...OperatorPayments.routes,
  ...Provider.routes,
  ...Users.routes,
  ...Audit.routes
] as const

/** An application's pages, for its members and operator admins. */
export const applicationRoutes = [
  ...Overview.routes,
  ...Keys.routes,
  ...Webhooks.routes,
  ...ApplicationDeliveries.routes,
  ...PaymentList.routes,
  ...ApplicationPayments.routes,
  ...Members.routes
] as const

/** Every dashboard route: the router's, and the 405 answers'. */
export const routes = [
  ...SignIn.routes,
  ...Home.routes,
  ...Account.routes,
  ...Assets.routes,
  ...operatorRoutes,
  ...applicationRoutes
] as const

type Services = ServicesOf<typeof routes>

export const layer = Layer.unwrap(
  Effect.gen(function* () {
    const guard = yield* DashboardGuard
    const services = yield* Effect.context<Services>()
    // The request's own context (its Scope, the request, the route's parameters) wins over the one this layer was
    // built in, which gives the services.
    const withServices = (
      effect: Effect.Effect<Response, never, Services | HttpRouter.Provided>
    ): Effect.Effect<Response, never, HttpRouter.Provided> =>
      Effect.updateContext(effect, (request: Context.Context<HttpRouter.Provided>) => Context.merge(services, request))
    return HttpRouter.addAll(
      routes.map((route) =>
        HttpRouter.route(route.method, route.path, withServices(guard.middleware(route as DashboardRoute<Services>)))
      )
    )
  })
).pipe(Layer.provide(OperatorQueries.layer))

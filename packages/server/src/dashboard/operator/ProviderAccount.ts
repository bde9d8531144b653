/**
 * An application's payment provider account, on the operator's application page (issue 12 §2): link one (the
 * operator API's own body schema, for the provider the server's connector speaks to; ProviderLinking checks the key
 * and creates the webhook endpoint) or retire the link. Template: pages/dashboard/OperatorProviderAccount.ts.
 */
import { OperatorSchemas, RequestValidation } from "@kassa/core"
import { Effect, Option, Redacted, Result } from "effect"
import { AuditLog } from "../../audit/AuditLog.ts"
import { ProviderConnector } from "../../providers/ProviderConnector.ts"
import { ProviderLinking } from "../../providers/ProviderLinking.ts"
import { PostedForm, redirect, route, SignedIn } from "../DashboardRoute.ts"
import { applicationsPath, detail, withApplication } from "./Applications.ts"

const link = withApplication((application) =>
  Effect.gen(function* () {
    // The operator API's own body schema: the form accepts exactly the keys the API does.
    const decoded = RequestValidation.validate(OperatorSchemas.LinkProviderBody)({
      provider: (yield* ProviderConnector).provider,
      secret_key: (yield* PostedForm).value("secret_key").trim()
    })
    if (Result.isFailure(decoded)) {
      const messages = decoded.failure.fields.secret_key ?? ["secret_key is not valid"]
      return yield* detail(application, { providerProblem: messages.join(" ") }, 422)
    }
    const linked = yield* (yield* ProviderLinking).link(application.id, Redacted.make(decoded.success.secret_key)).pipe(
      Effect.map(Result.succeed),
      Effect.catchTags({
        LinkRefused: (refused) => Effect.succeed(Result.fail({ status: 422, message: refused.message })),
        EndpointRefused: (refused) => Effect.succeed(Result.fail({ status: 502, message: refused.message })),
        ProviderUnavailable: (unavailable) => Effect.succeed(Result.fail({ status: 502, message: unavailable.message }))
      })
    )
    if (Result.isFailure(linked))
      return yield* detail(application, { providerProblem: linked.failure.message }, linked.failure.status)
    const { link, retired } = linked.success
    yield* (yield* AuditLog).record((yield* SignedIn).actor, {
      action: "provider_account.linked",
      applicationId: application.id,
      target: link.id,
      details: {
        provider: link.provider,
        account_id: link.accountId,
        livemode: link.livemode,
        key_display: link.keyDisplay,
        webhook_endpoint_id: link.webhookEndpointId,
        retired_link: Option.match(retired, { onNone: () => null, onSome: (previous) => previous.id })
      }
    })
    return redirect(`${applicationsPath}/${application.id}`, "provider_linked")
  })
)

const retire = withApplication((application) =>
  Effect.gen(function* () {
    const retired = yield* (yield* ProviderLinking).retire(application.id)
    if (Option.isNone(retired))
      return yield* detail(application, { providerProblem: "No payment provider account is linked." }, 409)
    yield* (yield* AuditLog).record((yield* SignedIn).actor, {
      action: "provider_account.retired",
      applicationId: application.id,
      target: retired.value.id,
      details: {
        provider: retired.value.provider,
        account_id: retired.value.accountId,
        key_display: retired.value.keyDisplay,
        endpoint_deleted: retired.value.endpointRetiredAt !== null
      }
    })
    return redirect(`${applicationsPath}/${application.id}`, "provider_retired")
  })
)

export const routes = [
  route("POST", `${applicationsPath}/:id/provider-account`, "operator", link),
  route("POST", `${applicationsPath}/:id/provider-account/retire`, "operator", retire)
] as const

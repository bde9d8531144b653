/**
 * An application's payment provider account, on the operator's application page (issue 12 §2, issue 21 §1): link one
 * (the operator API's own body schema, for the provider the operator chose; ProviderLinking checks the key, creates
 * the provider's webhook endpoint where it has one, and audits the attempt) or retire the link. Template:
 * pages/dashboard/OperatorProviderAccount.ts.
 */
import { OperatorSchemas, RequestValidation } from "@kassa/core"
import { Effect, Option, Redacted, Result } from "effect"
import { ProviderLinking } from "../../providers/ProviderLinking.ts"
import { PostedForm, redirect, route, SignedIn } from "../DashboardRoute.ts"
import { applicationsPath, detail, withApplication } from "./Applications.ts"

const link = withApplication((application) =>
  Effect.gen(function* () {
    const form = yield* PostedForm
    // The operator API's own body schema: the form accepts exactly the providers and keys the API does.
    const decoded = RequestValidation.validate(OperatorSchemas.LinkProviderBody)({
      provider: form.value("provider").trim(),
      secret_key: form.value("secret_key").trim()
    })
    if (Result.isFailure(decoded)) {
      const { fields } = decoded.failure
      const messages = [...(fields.provider ?? []), ...(fields.secret_key ?? [])]
      return yield* detail(
        application,
        { providerProblem: messages.length === 0 ? "secret_key is not valid" : messages.join(" ") },
        422
      )
    }
    const linked = yield* (yield* ProviderLinking)
      .link({
        applicationId: application.id,
        provider: decoded.success.provider,
        secretKey: Redacted.make(decoded.success.secret_key),
        actor: (yield* SignedIn).actor
      })
      .pipe(
        Effect.map(Result.succeed),
        Effect.catchTags({
          LinkRefused: (refused) => Effect.succeed(Result.fail({ status: 422, message: refused.message })),
          EndpointRefused: (refused) => Effect.succeed(Result.fail({ status: 502, message: refused.message })),
          ProviderUnavailable: (unavailable) =>
            Effect.succeed(Result.fail({ status: 502, message: unavailable.message }))
        })
      )
    if (Result.isFailure(linked))
      return yield* detail(application, { providerProblem: linked.failure.message }, linked.failure.status)
    return redirect(`${applicationsPath}/${application.id}`, "provider_linked")
  })
)

const retire = withApplication((application) =>
  Effect.gen(function* () {
    const retired = yield* (yield* ProviderLinking).retire(application.id, (yield* SignedIn).actor)
    if (Option.isNone(retired))
      return yield* detail(application, { providerProblem: "No payment provider account is linked." }, 409)
    return redirect(`${applicationsPath}/${application.id}`, "provider_retired")
  })
)

export const routes = [
  route("POST", `${applicationsPath}/:id/provider-account`, "operator", link),
  route("POST", `${applicationsPath}/:id/provider-account/retire`, "operator", retire)
] as const

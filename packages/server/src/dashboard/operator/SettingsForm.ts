/**
 * The operator's settings form of an application (new and existing), read through the core's settings catalogue
 * (OperatorSettings) as the operator API's body, so the form and the API accept the same values and report the same
 * rules (`OperatorSettings.ruleErrors`); and what a save changed.
 */
import { type ApiError, OperatorSettings } from "@kassa/core"
import { Result } from "effect"
import type { StoredApplication } from "../../applications/ApplicationRepository.ts"
import type { SettingsValues } from "../../pages/dashboard/OperatorApplicationViews.ts"
import type { FieldMessages } from "../../pages/dashboard/OperatorViews.ts"
import type { Posted } from "../DashboardRoute.ts"
import { collectErrors, joined } from "./OperatorFrame.ts"

/**
 * The settings form as the operator API's body: every field of the catalogue's form read by its input
 * (`OperatorSettings.fromForm`: lists split, empty optional fields null, numbers parsed). A number field that is not
 * a whole number is reported here and left out of the body.
 */
const readSettings = (posted: Posted) => {
  const values = Object.fromEntries(
    OperatorSettings.formNames.map((name) => [name, posted.value(name)])
  ) as unknown as SettingsValues
  const body: Record<string, unknown> = {}
  const errors: Record<string, Array<string>> = {}
  for (const name of OperatorSettings.formNames) {
    const read = OperatorSettings.fromForm(name, values[name])
    if (Result.isSuccess(read)) body[name] = read.success
    else errors[name] = [read.failure]
  }
  return { values, body, errors }
}

/**
 * The settings form checked as the operator API checks its body: `validate` (the create or the update body's
 * schema), then the rules over the settings that result (`resulting`: the stored or default values under the sent
 * ones). The decoded body, or every field's message, with the form as typed to show again.
 */
export const checkSettings = <A extends OperatorSettings.UpdateApplicationBody>(
  posted: Posted,
  validate: (body: unknown) => Result.Result<A, ApiError.ValidationFailed>,
  resulting: (sent: A) => { readonly min_amount: number; readonly max_amount: number },
  production: boolean
): { readonly values: SettingsValues; readonly checked: Result.Result<A, FieldMessages> } => {
  const { values, body, errors } = readSettings(posted)
  const decoded = validate(body)
  if (Result.isFailure(decoded)) collectErrors(errors, decoded.failure.fields, body)
  else if (Object.keys(errors).length === 0)
    collectErrors(errors, OperatorSettings.ruleErrors(decoded.success, resulting(decoded.success), production), body)
  return {
    values,
    checked:
      Result.isFailure(decoded) || Object.keys(errors).length > 0
        ? Result.fail(joined(errors))
        : Result.succeed(decoded.success)
  }
}

/** What a settings form changes, by name (values are left out: a webhook URL may carry a token). */
export const changedSettings = (current: StoredApplication, next: Readonly<Record<string, unknown>>) =>
  Object.keys(next).filter(
    (name) => JSON.stringify(next[name]) !== JSON.stringify(current[name as keyof StoredApplication])
  )

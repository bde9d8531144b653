/**
 * The operator API's wire schemas moved to the core (`OperatorSettings`, `OperatorSchemas` of `@kassa/core`). These
 * re-exports keep the dashboards' imports working until they import from the core; nothing new should use them.
 */
import { OperatorSchemas, OperatorSettings } from "@kassa/core"

export const { CreateApplicationBody, UpdateApplicationBody, WebhookUrl, insecureInProduction } = OperatorSettings
export type UpdateApplicationBody = OperatorSettings.UpdateApplicationBody
export const settingsRuleErrors = OperatorSettings.ruleErrors
export const { CreateUserBody, UpdateUserBody, LinkProviderBody } = OperatorSchemas

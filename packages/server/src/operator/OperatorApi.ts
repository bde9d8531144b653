/**
 * The operator API's contract is the core's `OperatorApi`; this re-export keeps `http/ResponseMiddleware.ts`'s import
 * of the prefix working until that file imports it from `@kassa/core`.
 */
import { OperatorApi } from "@kassa/core"

export const { operatorPrefix } = OperatorApi

// TEMPORARY (this session): replaced by the payments helper's handlers.
import { ApiError, MerchantApi } from "@kassa/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

const notYet = () => Effect.fail(new ApiError.ServerError({ message: "not wired yet" }))

export const PaymentsHandlers = HttpApiBuilder.group(MerchantApi.MerchantApi, "payments", (handlers) =>
  Effect.succeed(
    handlers
      .handle("create", notYet)
      .handle("retrieve", notYet)
      .handle("list", notYet)
      .handle("cancel", notYet)
      .handle("refund", notYet)
  )
)

export const TestHandlers = HttpApiBuilder.group(MerchantApi.MerchantApi, "test", (handlers) =>
  Effect.succeed(handlers.handle("simulate", notYet))
)

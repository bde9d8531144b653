// TEMPORARY (this session): replaced by the authentication helper's implementation.
import { ApiError, Authentication } from "@kassa/core"
import { Effect, Layer } from "effect"

export const layer = Layer.succeed(Authentication.Authentication, {
  bearer: () => Effect.fail(new ApiError.Unauthenticated({ message: "not wired yet" }))
})

import { verify, WebhookVerificationError } from "@kassa/webhook-verify"
import Fastify from "fastify"
import { handleEvent, webhookSecret } from "./app.ts"

export const app = Fastify()

// An encapsulated plugin: only its routes get the body as a Buffer; the rest
// of the app keeps Fastify's JSON parser.
app.register(async (webhooks) => {
  webhooks.addContentTypeParser("application/json", { parseAs: "buffer" }, (_request, body, done) => {
    done(null, body)
  })

  webhooks.post<{ Body: Buffer }>("/webhooks/kassa", async (request, reply) => {
    try {
      const event = await verify(request.body, request.headers["x-service-signature"], webhookSecret)
      await handleEvent(event)
      return reply.code(200).send()
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error
      return reply.code(400).type("text/plain").send(error.message)
    }
  })
})

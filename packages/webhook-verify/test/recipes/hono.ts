import { verifyRequest, WebhookVerificationError } from "@kassa/webhook-verify"
import { Hono } from "hono"
import { handleEvent, webhookSecret } from "./app.ts"

export const app = new Hono()

app.post("/webhooks/kassa", async (c) => {
  try {
    // c.req.raw is the Web Request; verify it before any validator reads the body.
    const event = await verifyRequest(c.req.raw, webhookSecret)
    await handleEvent(event)
    return c.body(null, 200)
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error
    return c.text(error.message, 400)
  }
})

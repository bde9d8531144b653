import { InMemoryHandledEventStore, verify, WebhookVerificationError } from "@kassa/webhook-verify"
import express from "express"
import { handleEvent, webhookSecret } from "./app.ts"

// Kassa delivers at least once. In production, record handled ids in your database.
const handled = new InMemoryHandledEventStore()

export const app = express()

// express.raw on this route only: the signature covers the exact bytes Kassa sent.
app.post("/webhooks/kassa", express.raw({ type: "application/json" }), async (req, res) => {
  try {
    const event = await verify(req.body, req.headers["x-service-signature"], webhookSecret)
    if (!(await handled.has(event.id))) {
      await handleEvent(event)
      await handled.add(event.id)
    }
    res.sendStatus(200)
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error
    res.status(400).type("text/plain").send(error.message)
  }
})

import { createServer } from "node:http"
import { verify, WebhookVerificationError } from "@kassa/webhook-verify"
import { handleEvent, webhookSecret } from "./app.ts"

export const server = createServer(async (req, res) => {
  if (req.method !== "POST" || req.url !== "/webhooks/kassa") {
    res.writeHead(404).end()
    return
  }
  // Collect the raw bytes: the signature covers the body exactly as sent.
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk)
  try {
    const event = await verify(Buffer.concat(chunks), req.headers["x-service-signature"], webhookSecret)
    await handleEvent(event)
    res.writeHead(200).end()
  } catch (error) {
    if (error instanceof WebhookVerificationError) {
      // Kassa shows the start of the response body in its delivery list.
      res.writeHead(400, { "content-type": "text/plain" }).end(error.message)
    } else {
      res.writeHead(500).end()
    }
  }
})

// app/webhooks/kassa/route.ts (Next.js App Router; the same works on Deno, Bun and Workers)
import { verifyRequest, WebhookVerificationError } from "@kassa/webhook-verify"
import { handleEvent, webhookSecret } from "./app.ts"

export async function POST(request: Request): Promise<Response> {
  try {
    const event = await verifyRequest(request, webhookSecret)
    await handleEvent(event)
    return new Response(null, { status: 200 })
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error
    return new Response(error.message, { status: 400 })
  }
}

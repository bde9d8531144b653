// Stands in for the receiver's own code in the recipes: where the secret comes
// from (in a real app, process.env.KASSA_WEBHOOK_SECRET) and what handling an
// event means. The tests read `received` to see what each recipe handled.
import type { KassaEvent } from "@kassa/webhook-verify"

export const webhookSecret = "whsec_RecipeTestSecret0123456789abcdef"

export const received: Array<KassaEvent> = []

export const handleEvent = async (event: KassaEvent): Promise<void> => {
  received.push(event)
}

import { randomBytes } from "node:crypto"
import { Webhook as StandardWebhook } from "standardwebhooks"

/** A new signing secret, `whsec_` and 32 random bytes in base64: shown once, when the webhook is connected. */
export const generateSigningSecret = (): string => `whsec_${randomBytes(32).toString("base64")}`

/**
 * A POST of a JSON `body` signed by the Standard Webhooks scheme with `secret` (`whsec_…`): `id` is the same on
 * every delivery of one message, so that a receiver can tell a repeat. A webhook account's publish and an
 * organization's event are both sent this way (docs/webhooks.md). Throws on a secret that is not one.
 */
export const signedWebhookRequest = (secret: string, id: string, body: string, now = new Date()) => ({
  method: "POST" as const,
  headers: {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": new StandardWebhook(secret).sign(id, now, body)
  },
  body
})

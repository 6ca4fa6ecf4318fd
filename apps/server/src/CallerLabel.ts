import { Caller } from "@postline/domain"

/** Who acts, in words that name one caller for good: for binding cursors and idempotency keys to their caller. */
export const callerLabel = Caller.$match({
  User: ({ user }) => `user ${user.id}`,
  ApiKey: ({ apiKeyId }) => `api key ${apiKeyId}`
})

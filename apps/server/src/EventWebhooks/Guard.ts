import { configuredOutbound } from "../Outbound/Outbound.js"

/** How long one delivery of an event may take, connecting (at most 5 s of it) and reading the answer included. */
export const deliveryTimeoutMillis = 10_000

/**
 * The outbound guard for event webhooks, configured as the providers' (`OUTBOUND_ALLOW_PRIVATE`): only `https:`
 * addresses on the public internet, redirects not followed, answers read up to 1 MiB. Its own instance, for its
 * own timeout.
 */
export const EventsGuardLive = configuredOutbound(deliveryTimeoutMillis)

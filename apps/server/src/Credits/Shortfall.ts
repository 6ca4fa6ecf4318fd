import type { OrganizationId } from "@postline/domain"
import { Option } from "effect"
import type { BillingSettings } from "../Billing/Settings.js"

/** "1 credit", "5 credits". */
export const creditCount = (count: number) => `${count} ${count === 1 ? "credit" : "credits"}`

/**
 * What an organization that lacks `lacking` credits is told to do on this server: with billing off (no
 * STRIPE_SECRET_KEY) only an operator can add credits, with the admin command, given ready to run; with it on, an
 * admin or owner buys a pack through a checkout.
 */
export const howToGetCredits = (
  billing: Pick<BillingSettings, "stripe" | "packs">,
  organizationId: OrganizationId,
  lacking: number
) =>
  Option.isNone(billing.stripe)
    ? `Billing is off on this server, so an operator adds credits with ` +
      `\`pnpm admin credits grant --organization ${organizationId} --amount ${lacking}\``
    : `An admin or owner buys a pack of ${billing.packs.map((pack) => pack.credits).join(" or ")} credits with a ` +
      `checkout: POST /v1/organizations/${organizationId}/billing/checkout`

/** The 402 message of a spend of `total` that the organization's `available` credits do not cover. */
export const shortfallMessage = (
  billing: Pick<BillingSettings, "stripe" | "packs">,
  what: string,
  organizationId: OrganizationId,
  total: number,
  available: number
) =>
  `${what} needs ${creditCount(total)} and the organization has ${available} available. ` +
  howToGetCredits(billing, organizationId, total - available)

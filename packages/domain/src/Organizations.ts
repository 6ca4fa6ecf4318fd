import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { invalidUnless, Name, oneOf, optional, strict, Text, Timestamp } from "./Fields.js"
import { OrganizationId } from "./Ids.js"
import { ListEnvelope, listQueryFields } from "./Lists.js"

export const SubscriptionStatus = oneOf(
  "active",
  "inactive",
  "trialing",
  "past_due",
  "canceled",
  "paused",
  "unpaid"
).annotations({ identifier: "SubscriptionStatus" })

const onboardingSteps = [
  "organization_profile",
  "job_role",
  "workspace_setup",
  "goals",
  "mcp_cli_setup",
  "spend_cap",
  "completed"
] as const

export const OnboardingStep = oneOf(...onboardingSteps).annotations({ identifier: "OnboardingStep" })

export const JobRole = oneOf(
  "developer_or_technical_founder",
  "founder_or_owner",
  "marketing_or_social",
  "agency_or_client_services",
  "operations_or_admin",
  "other"
).annotations({ identifier: "JobRole" })

const stringOrNull = invalidUnless("must be a string or null")

/** Contract 2.2: no other properties anywhere inside, so every level is strict. */
export const OnboardingData = Schema.Struct({
  version: Schema.Literal(1).annotations(invalidUnless("must be 1")),
  status: oneOf("in_progress", "completed"),
  currentStep: OnboardingStep,
  completedSteps: Schema.Array(OnboardingStep).pipe(
    Schema.filter((steps) => steps.length <= onboardingSteps.length, { jsonSchema: { maxItems: onboardingSteps.length } })
  ).annotations({
    description: `The steps completed so far, at most ${onboardingSteps.length}`,
    message: () => `must be an array of at most ${onboardingSteps.length} steps`
  }),
  organizationProfile: optional(
    Schema.Struct({ displayName: Name, jobRole: optional(JobRole) }).annotations({
      ...strict,
      identifier: "OnboardingOrganizationProfile"
    })
  ),
  workspaceProfile: optional(
    Schema.Struct({ teamName: Name, website: Schema.NullOr(Text).annotations(stringOrNull) }).annotations({
      ...strict,
      identifier: "OnboardingWorkspaceProfile"
    })
  ),
  goals: optional(
    Schema.Struct({
      primaryGoal: oneOf("vibe_marketing", "social_media_marketing", "automated_campaigns_for_clients"),
      teamSize: oneOf("1-5", "6-20", "21-50", "51+")
    }).annotations({ ...strict, identifier: "OnboardingGoals" })
  ),
  completedAt: optional(Schema.NullOr(Text).annotations({ ...stringOrNull, description: "ISO 8601 timestamp" }))
}).annotations({ ...strict, identifier: "OnboardingData" })
export type OnboardingData = typeof OnboardingData.Type

/** An id at the payment provider: billing's, so shown to admins, owners and API keys only. */
const paymentIdentifier = (what: string) =>
  Schema.NullOr(Schema.String).annotations({
    description: `The payment provider's id of the organization's ${what}; null when there is none, and for members who are not admins or owners`
  })

export const Organization = Schema.Struct({
  id: OrganizationId,
  name: Name,
  billingEmail: Schema.NullOr(Schema.String),
  onboardingData: Schema.NullOr(OnboardingData),
  paymentCustomerId: paymentIdentifier("customer"),
  paymentSubscriptionId: paymentIdentifier("subscription"),
  paymentPaymentMethodId: paymentIdentifier("saved payment method"),
  paymentMeteredSubscriptionItemId: paymentIdentifier("subscription's metered item"),
  creditsBalance: Schema.Number,
  reservedCredits: Schema.Number,
  autoRechargeEnabled: Schema.Boolean,
  autoRechargeThreshold: Schema.NullOr(Schema.Number),
  autoRechargeAmount: Schema.NullOr(Schema.Number),
  isSubscribed: Schema.Boolean,
  subscriptionStatus: SubscriptionStatus,
  subscriptionPlan: Schema.NullOr(Schema.String),
  subscriptionStartedAt: Schema.NullOr(Timestamp),
  subscriptionEndsAt: Schema.NullOr(Timestamp),
  subscriptionCurrentPeriodEnd: Schema.NullOr(Timestamp),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotations({ identifier: "Organization" })
export type Organization = typeof Organization.Type

export const CreateOrganization = Schema.Struct({ name: Name }).annotations({
  ...strict,
  identifier: "CreateOrganization"
})

export const UpdateOrganization = Schema.Struct({
  name: optional(Name),
  onboardingData: optional(Schema.NullOr(OnboardingData))
}).annotations({ ...strict, identifier: "UpdateOrganization" })
export type UpdateOrganization = typeof UpdateOrganization.Type

export const OrganizationList = ListEnvelope(Organization, "OrganizationList")

/** The path parameters of anything inside one organization. */
export const OrganizationPath = Schema.Struct({ organizationId: OrganizationId })

export class OrganizationsGroup extends HttpApiGroup.make("organizations")
  .add(
    HttpApiEndpoint.get("listOrganizations", "/v1/organizations")
      .setUrlParams(Schema.Struct(listQueryFields).annotations(strict))
      .addSuccess(OrganizationList)
      .annotate(OpenApi.Summary, "List organizations")
      .annotate(OpenApi.Description, "The organizations the caller belongs to, one page at a time.")
  )
  .add(
    HttpApiEndpoint.post("createOrganization", "/v1/organizations")
      .setPayload(CreateOrganization)
      .addSuccess(Organization, { status: 201 })
      .annotate(OpenApi.Summary, "Create organization")
      .annotate(OpenApi.Description, "Creates an organization with no credits and no subscription; the caller becomes its admin.")
  )
  .add(
    HttpApiEndpoint.get("getOrganization", "/v1/organizations/:organizationId")
      .setPath(OrganizationPath)
      .addSuccess(Organization)
      .annotate(OpenApi.Summary, "Get organization")
      .annotate(OpenApi.Description, "One organization the caller belongs to; any other gives 404.")
  )
  .add(
    HttpApiEndpoint.patch("updateOrganization", "/v1/organizations/:organizationId")
      .setPath(OrganizationPath)
      .setPayload(UpdateOrganization)
      .addSuccess(Organization)
      .annotate(OpenApi.Summary, "Update organization")
      .annotate(
        OpenApi.Description,
        "Changes the name or onboarding data. Only an admin or owner may (403 for other members, 404 for non-members)."
      )
  )
  .annotate(OpenApi.Title, "organizations")
  .annotate(OpenApi.Description, "Organizations: the billing and credit boundary, owning teams")
{}

/** The exact field sets of the contract's resources, as the tests expect them in answers. */
export const organizationKeys = [
  "autoRechargeAmount",
  "autoRechargeEnabled",
  "autoRechargeThreshold",
  "billingEmail",
  "createdAt",
  "creditsBalance",
  "id",
  "isSubscribed",
  "name",
  "onboardingData",
  "paymentCustomerId",
  "paymentMeteredSubscriptionItemId",
  "paymentPaymentMethodId",
  "paymentSubscriptionId",
  "reservedCredits",
  "subscriptionCurrentPeriodEnd",
  "subscriptionEndsAt",
  "subscriptionPlan",
  "subscriptionStartedAt",
  "subscriptionStatus",
  "updatedAt"
]

export const teamKeys = ["createdAt", "id", "linkTrackingDefault", "name", "organizationId", "timezone", "updatedAt", "website"]

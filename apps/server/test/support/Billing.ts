/** The whole billing account (`GET …/billing`'s `account`) of an organization that never bought anything. */
export const accountWithNothingBought = (spentThisMonth: number) => ({
  paymentCustomerId: null,
  paymentSubscriptionId: null,
  paymentPaymentMethodId: null,
  paymentMeteredSubscriptionItemId: null,
  isSubscribed: false,
  subscriptionStatus: "inactive",
  subscriptionPlan: null,
  subscriptionStartedAt: null,
  subscriptionEndsAt: null,
  subscriptionCurrentPeriodEnd: null,
  autoRecharge: { enabled: false, threshold: null, amount: null, pending: false, lastError: null },
  spendCap: { monthlyCredits: null, spentThisMonth }
})

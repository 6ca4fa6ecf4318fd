import { expect, layer } from "@effect/vitest"
import type { OrganizationId } from "@postline/domain"
import { ConfigProvider, Effect, Layer } from "effect"
import { withSystemActor } from "../src/Access/Authorization.js"
import { CreditsRepo } from "../src/Credits/Repo.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { publishingTeam } from "./support/Publishing.js"
import { makeStripeFake } from "./support/StripeFake.js"
import { TestServer } from "./support/TestServer.js"

/**
 * A new organization has no credits: its first post to Mastodon is refused (402), and the refusal and the estimate
 * say how this server gives credits: the operator's admin command with billing off, a checkout with it on.
 */

const stripe = await makeStripeFake()

const serverWith = (settings: Record<string, string>) =>
  Layer.provideMerge(CreditsRepo.Default, TestServer).pipe(Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map(Object.entries(settings))).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  )))

/** A new organization's first post, to a Mastodon account: its estimate and the answer to post-now. */
const firstPost = Effect.gen(function*() {
  const mastodon = yield* makeMastodonFake()
  const team = yield* publishingTeam(0)
  const toot = yield* team.connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
  const post = yield* team.draft("Hello, fediverse")
  const estimate = yield* team.call("POST", `/posts/${post.id}/estimate`, { socialAccountIds: [toot.id] })
  const refused = yield* team.postNow(post.id, [toot.id])
  return { ...team, mastodon, toot, post, estimate, refused }
})

layer(serverWith({ STRIPE_SECRET_KEY: "" }), { excludeTestServices: true })("how to get credits, billing off", (it) => {
  it.scoped("the refusal of a first post and its estimate name the admin command that grants what is lacking; run, the post goes out", () =>
    Effect.gen(function*() {
      const { estimate, mastodon, organization, post, postNow, refused, toot } = yield* firstPost
      const grant = `pnpm admin credits grant --organization ${organization.id} --amount 1`
      const howTo = `Billing is off on this server, so an operator adds credits with \`${grant}\``
      expect(estimate).toMatchObject({
        status: 200,
        body: { total: 1, available: 0, sufficient: false, howToGetCredits: howTo }
      })
      expect(refused).toMatchObject({
        status: 402,
        body: { _tag: "PaymentRequired", message: `Publishing needs 1 credit and the organization has 0 available. ${howTo}` }
      })
      expect(mastodon.statuses).toEqual([])
      // What the command does (admin credits grant): then the post goes out, and the estimate has nothing to say.
      const credits = yield* CreditsRepo
      yield* withSystemActor(credits.grant(organization.id as OrganizationId, 1, null))
      expect((yield* postNow(post.id, [toot.id])).status).toBe(200)
      expect(mastodon.statuses).toHaveLength(1)
    }))

  it.scoped("an estimate the credits cover says nothing of getting credits", () =>
    Effect.gen(function*() {
      const { call, organization, post, toot } = yield* firstPost
      const credits = yield* CreditsRepo
      yield* withSystemActor(credits.grant(organization.id as OrganizationId, 5, null))
      const estimate = yield* call("POST", `/posts/${post.id}/estimate`, { socialAccountIds: [toot.id] })
      expect(estimate.body).toEqual({
        total: 1,
        perAccount: [{ socialAccountId: toot.id, credits: 1, publishes: 1, problems: [] }],
        available: 5,
        sufficient: true
      })
    }))
})

layer(serverWith(stripe.settings), { excludeTestServices: true })("how to get credits, billing on", (it) => {
  it.scoped("the refusal of a first post and its estimate name the checkout and the packs on sale", () =>
    Effect.gen(function*() {
      const { estimate, organization, refused } = yield* firstPost
      const howTo = "An admin or owner buys a pack of 1000 or 5000 credits with a checkout: " +
        `POST /v1/organizations/${organization.id}/billing/checkout`
      expect(estimate).toMatchObject({ status: 200, body: { total: 1, available: 0, sufficient: false, howToGetCredits: howTo } })
      expect(refused).toMatchObject({
        status: 402,
        body: { _tag: "PaymentRequired", message: `Publishing needs 1 credit and the organization has 0 available. ${howTo}` }
      })
    }))
})

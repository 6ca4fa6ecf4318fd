import type { Agent } from "@atproto/api"
import { Effect, Redacted } from "effect"
import { type LazyModule, lazyModule } from "../LazyModule.js"
import { Outbound } from "../Outbound/Outbound.js"
import { OutboundError } from "../Outbound/OutboundError.js"
import { embedImages, fitImage, mediaProblems } from "./BlueskyImages.js"
import { postRecordKey } from "./BlueskyRecordKey.js"
import { BlueskyOAuthClients } from "./BlueskyOAuthClient.js"
import { type BlueskyAppPassword, type BlueskySignedIn, type CredentialsOf, defaultBlueskyService } from "./Credentials.js"
import { fromOutbound, fromStatus } from "./Errors.js"
import { defaultContentLimits, providerRules } from "./Rules.js"
import {
  type ContentLimits,
  type ContentProblem,
  ProviderError,
  type SocialProvider
} from "./SocialProvider.js"
import { graphemeLength, lengthProblems } from "./TextLength.js"

/** The network's client: 1.6 MB of code, loaded when an account is first used rather than at every start. */
export const AtProtoModule = lazyModule("@atproto/api", () => import("@atproto/api"), {
  Agent: "function",
  AtpAgent: "function",
  AtUri: "function",
  BlobRef: "function",
  RichText: "function",
  XRPCError: "function"
})
type AtProto = LazyModule.Exports<typeof AtProtoModule>

/** A session with the account's PDS, for one call, and how to end it. */
interface OpenSession {
  readonly agent: Agent
  readonly session: { readonly did: string; readonly handle: string; readonly pdsUrl: string }
  readonly close: () => Promise<unknown>
}

// The limits are Rules.ts's, which GET /v1/providers answers.
const defaultLimits: ContentLimits = defaultContentLimits.bluesky

// The most URIs app.bsky.feed.getPosts takes at once.
const postsPerRead = 25

// app.bsky.feed.post also caps the text at 3000 bytes of UTF-8, which 300 long grapheme clusters can pass.
const maxBytes = providerRules.bluesky.text.maxBytes

// Errors the PDS answers with status 400 that are about the session, not the content.
const authErrors = new Set(["ExpiredToken", "InvalidToken", "AccountTakedown", "AccountDeactivated", "AuthFactorTokenRequired"])

/**
 * What a failed call means. `during` tells 400 apart: at login the identifier is malformed (`auth`);
 * when writing, the record is invalid (`invalid_content`).
 */
const toProviderError = (atproto: AtProto, during: "login" | "write" | "read") => (error: unknown): ProviderError => {
  if (error instanceof ProviderError) return error
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof OutboundError) return fromOutbound("bluesky", cause)
  }
  if (!(error instanceof atproto.XRPCError)) {
    return new ProviderError({ provider: "bluesky", category: "unknown", retryable: false, providerMessage: String(error) })
  }
  // Statuses below 100 are the client's own: 1 when no answer came back, 2 when it made no sense.
  if (error.status < 100) {
    const category = error.status === 1 ? "transient" : "unknown"
    return new ProviderError({ provider: "bluesky", category, retryable: category === "transient", providerMessage: error.message })
  }
  return fromStatus({
    provider: "bluesky",
    status: error.status,
    header: (name) => error.headers?.[name],
    providerMessage: `${error.error}: ${error.message}`,
    // A refused login is the credentials', a refused write the content's; a refused read neither.
    clientError: error.status === 400 || error.status === 413
      ? (during === "login" ? "auth" : during === "write" ? "invalid_content" : "unknown")
      : "unknown",
    ...(authErrors.has(error.error) ? { category: "auth" as const } : {})
  })
}

/**
 * Bluesky, or any AT Protocol service, through the network's own client (@atproto/api) with the guarded
 * outbound client as its fetch. Each call logs in with the app password and logs out after: the PDS
 * allows 30 logins per account in 5 minutes and 300 a day, which is ample for publishing and spares
 * Postline from keeping session tokens. The protocol has no idempotency key; instead a post's record key
 * comes from Postline's key, so that a repeat finds the record the first attempt wrote.
 */
export class Bluesky extends Effect.Service<Bluesky>()("Bluesky", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound
    const oauthClients = yield* BlueskyOAuthClients
    const loadAtProto = yield* Effect.cached(AtProtoModule.load)

    /** A session logged in with the app password, logged out after. */
    const appPasswordSession = (atproto: AtProto, credentials: typeof BlueskyAppPassword.Type) =>
      Effect.tryPromise({
        try: async (): Promise<OpenSession> => {
          const service = credentials.serviceUrl ?? defaultBlueskyService
          const agent = new atproto.AtpAgent({ service, fetch: outbound.fetch })
          const { data } = await agent.login({ identifier: credentials.handle, password: Redacted.value(credentials.appPassword) })
          return {
            // An AtpAgent is an Agent whose session it keeps itself.
            agent: agent as unknown as Agent,
            session: { did: data.did, handle: data.handle, pdsUrl: agent.pdsUrl?.toString() ?? service },
            close: () => agent.logout().catch(() => undefined)
          }
        },
        catch: toProviderError(atproto, "login")
      })

    /** The session of an account connected by signing in (its tokens renewed beforehand by TokenRenewal). */
    const signedInSession = (atproto: AtProto, credentials: typeof BlueskySignedIn.Type) =>
      Effect.flatMap(Effect.mapError(oauthClients.session(credentials), ({ error }) => toProviderError(atproto, "login")(error)), (oauthSession) =>
        Effect.tryPromise({
          try: async (): Promise<OpenSession> => {
            const agent = new atproto.Agent(oauthSession)
            const { data } = await agent.com.atproto.repo.describeRepo({ repo: oauthSession.did })
            const { aud } = await oauthSession.getTokenInfo(false)
            return { agent, session: { did: oauthSession.did, handle: data.handle, pdsUrl: aud }, close: async () => undefined }
          },
          catch: toProviderError(atproto, "login")
        }))

    const withSession = <A>(
      credentials: CredentialsOf<"bluesky">,
      use: (atproto: AtProto, agent: Agent, session: OpenSession["session"]) => Promise<A>,
      during: "write" | "read" = "write"
    ) =>
      Effect.flatMap(loadAtProto, (atproto) =>
        Effect.acquireUseRelease(
          "oauthSession" in credentials ? signedInSession(atproto, credentials) : appPasswordSession(atproto, credentials),
          ({ agent, session }) => Effect.tryPromise({ try: () => use(atproto, agent, session), catch: toProviderError(atproto, during) }),
          ({ close }) => Effect.promise(close)
        ))

    /** The post at `rkey` in the account's repository, if there is one. */
    const readPost = async (atproto: AtProto, agent: Agent, did: string, rkey: string) => {
      try {
        const { cid, uri, value } = await agent.app.bsky.feed.post.get({ repo: did, rkey })
        return { uri, cid, text: value.text }
      } catch (error) {
        if (error instanceof atproto.XRPCError && error.error === "RecordNotFound") return null
        throw error
      }
    }

    const readProfile = async (atproto: AtProto, agent: Agent, did: string) => {
      try {
        const { data } = await agent.com.atproto.repo.getRecord({ repo: did, collection: "app.bsky.actor.profile", rkey: "self" })
        return data.value as { readonly displayName?: unknown; readonly avatar?: unknown }
      } catch (error) {
        // A new account has no profile record yet.
        if (error instanceof atproto.XRPCError && error.error === "RecordNotFound") return {}
        throw error
      }
    }

    const provider: SocialProvider<"bluesky"> = {
      name: "bluesky",
      defaultLimits,
      threads: "replies",
      verify: (credentials) =>
        withSession(credentials, async (atproto, agent, { did, handle, pdsUrl }) => {
          const profile = await readProfile(atproto, agent, did)
          // The blob from the account's own PDS: the protocol's address, with or without Bluesky's AppView.
          const avatarUrl = profile.avatar instanceof atproto.BlobRef
            ? new URL(`/xrpc/com.atproto.sync.getBlob?${new URLSearchParams({ did, cid: profile.avatar.ref.toString() })}`, pdsUrl).toString()
            : null
          return {
            networkUserId: did,
            handle,
            displayName: typeof profile.displayName === "string" && profile.displayName !== "" ? profile.displayName : null,
            avatarUrl,
            profileUrl: `https://bsky.app/profile/${handle}`,
            limits: defaultLimits
          }
        }),
      publish: (account, post) =>
        Effect.gen(function*() {
          // Each image as Bluesky takes it, read from its file while the scope lasts.
          const images = yield* Effect.forEach(post.media, (medium) =>
            Effect.map(Effect.flatMap(medium.open, (blob) => fitImage(blob, medium)), (image) => [image, medium] as const))
          return yield* withSession(account.credentials, async (atproto, agent, { did, handle }) => {
            const richText = new atproto.RichText({ text: post.text })
            // Links and hashtags are found in the text; mentions are resolved to DIDs through the PDS.
            await richText.detectFacets(agent)
            const embed = images.length === 0 ? undefined : await embedImages(agent, images)
            const rkey = postRecordKey(post.idempotencyKey)
            // A thread's part names its thread's first part and the part it answers, as app.bsky.feed.post's reply.
            const reply = post.replyTo && {
              root: { uri: post.replyTo.root.externalId, cid: post.replyTo.root.reference ?? "" },
              parent: { uri: post.replyTo.parent.externalId, cid: post.replyTo.parent.reference ?? "" }
            }
            const created = await agent.app.bsky.feed.post.create({ repo: did, rkey }, {
              text: richText.text,
              ...(richText.facets ? { facets: richText.facets } : {}),
              ...(embed ? { embed } : {}),
              ...(reply ? { reply } : {}),
              createdAt: new Date().toISOString()
            }).then(({ cid, uri }) => ({ cid, uri }), async (error: unknown) => {
              // The PDS refuses a key already taken with a bare 500 InternalServerError (an explicit error is
              // only proposed), so after any answer that refuses, the key itself says whether the post is there.
              if (!(error instanceof atproto.XRPCError) || error.status < 400) throw error
              // A lookup that fails leaves the refusal as the answer: the next attempt looks again.
              const existing = await readPost(atproto, agent, did, rkey).catch((lookup: unknown) => {
                if (lookup instanceof atproto.XRPCError) return null
                throw lookup
              })
              if (existing === null) throw error
              if (existing.text !== richText.text) {
                throw new ProviderError({
                  provider: "bluesky",
                  category: "unknown",
                  retryable: false,
                  providerMessage: `The record key ${rkey} derived from this post's key already holds ${existing.uri}, with another text`
                })
              }
              return { cid: existing.cid ?? "", uri: existing.uri }
            })
            return {
              externalId: created.uri,
              url: `https://bsky.app/profile/${handle}/post/${new atproto.AtUri(created.uri).rkey}`,
              reference: created.cid
            }
          })
        }).pipe(Effect.scoped),
      // Each part's record is deleted; deleting a record that is no longer there succeeds as well.
      remove: (account, { parts }) =>
        withSession(account.credentials, async (atproto, agent, { did }) => {
          const uris = parts.map((part) => new atproto.AtUri(part.externalId))
          // Only the account's own repository can be written: a post of another account is not this one's to delete.
          const foreign = uris.find((uri) => uri.host !== did)
          if (foreign !== undefined) {
            throw new ProviderError({
              provider: "bluesky",
              category: "unknown",
              retryable: false,
              providerMessage: `${foreign.toString()} is not in the repository of the account connected now (${did})`
            })
          }
          for (const uri of uris) {
            await agent.com.atproto.repo.deleteRecord({ repo: did, collection: uri.collection, rkey: uri.rkey })
          }
        }),
      validate: (text, limits = defaultLimits) => {
        const problems: ReadonlyArray<ContentProblem> = lengthProblems(text, graphemeLength(text), limits)
        const bytes = Buffer.byteLength(text, "utf8")
        if (problems.length > 0 || bytes <= maxBytes) return problems
        return [{ code: "too_long", message: `The text is ${bytes} bytes long; Bluesky allows ${maxBytes}`, length: bytes, maxLength: maxBytes }]
      },
      // The limits are the lexicon's, the same for every account; a large image is made smaller when sent.
      validateMedia: mediaProblems,
      // Read through the account's PDS, which hands app.bsky.* calls to the AppView it is configured with.
      analytics: {
        batchSize: postsPerRead,
        engagement: (account, externalIds) =>
          withSession(account.credentials, async (_atproto, agent) => {
            const { data } = await agent.app.bsky.feed.getPosts({ uris: [...externalIds] })
            return data.posts.map((post) => ({
              externalId: post.uri,
              likes: post.likeCount ?? null,
              reposts: post.repostCount ?? null,
              replies: post.replyCount ?? null,
              quotes: post.quoteCount ?? null,
              views: null,
              raw: post
            }))
          }, "read"),
        accountCounts: (account) =>
          withSession(account.credentials, async (_atproto, agent, { did }) => {
            const { data } = await agent.app.bsky.actor.getProfile({ actor: did })
            return {
              followers: data.followersCount ?? null,
              following: data.followsCount ?? null,
              posts: data.postsCount ?? null,
              raw: data
            }
          }, "read")
      }
    }
    return provider
  }),
  dependencies: [BlueskyOAuthClients.Default]
}) {}

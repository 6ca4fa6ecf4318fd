import { AtpAgent } from "@atproto/api"
import { TestNetwork, TestNetworkNoAppView } from "@atproto/dev-env"

// A 1x1 PNG, so that a profile can have an avatar blob.
const avatarPng = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64"
)

/** @type {import("./index.d.ts").startBlueskyNetwork} */
export const startBlueskyNetwork = async (options = {}) => {
  const network = await TestNetworkNoAppView.create({
    pds: { rateLimitsEnabled: options.rateLimits ?? false }
  })
  return { ...accountsOn(network.pds.url), plcUrl: network.plc.url, close: () => network.close() }
}

/** @type {import("./index.d.ts").startBlueskyNetworkWithAppView} */
export const startBlueskyNetworkWithAppView = async ({ dbPostgresUrl, redisHost }) => {
  // TestNetwork insists on a Redis host; the AppView of this version keeps nothing there.
  process.env.REDIS_HOST ??= redisHost
  const network = await TestNetwork.create({ dbPostgresUrl, dbPostgresSchema: "network", pds: { rateLimitsEnabled: false } })
  const accounts = { ...accountsOn(network.pds.url), plcUrl: network.plc.url }

  /** The account's agent, logged in with its main password. */
  const agentOf = async (account) => {
    const agent = new AtpAgent({ service: network.pds.url })
    await agent.login({ identifier: account.handle, password: account.password })
    return agent
  }
  const strongRef = async (uri) => {
    const [, , repo, collection, rkey] = uri.split("/")
    const { data } = await new AtpAgent({ service: network.pds.url }).com.atproto.repo.getRecord({ repo, collection, rkey })
    return { uri, cid: data.cid }
  }

  return {
    ...accounts,
    appViewUrl: network.bsky.url,
    like: async (account, uri) => {
      const { cid } = await strongRef(uri)
      await (await agentOf(account)).like(uri, cid)
    },
    repost: async (account, uri) => {
      const { cid } = await strongRef(uri)
      await (await agentOf(account)).repost(uri, cid)
    },
    follow: async (account, did) => {
      await (await agentOf(account)).follow(did)
    },
    post: async (account, text) => {
      await (await agentOf(account)).post({ text })
    },
    reply: async (account, uri, text) => {
      const ref = await strongRef(uri)
      await (await agentOf(account)).post({ text, reply: { root: ref, parent: ref } })
    },
    quote: async (account, uri, text) => {
      const ref = await strongRef(uri)
      await (await agentOf(account)).post({ text, embed: { $type: "app.bsky.embed.record", record: ref } })
    },
    processAll: () => network.processAll(),
    close: () => network.close()
  }
}

/** Accounts, records and app passwords on the PDS at `serviceUrl`. */
const accountsOn = (serviceUrl) => {
  const reader = new AtpAgent({ service: serviceUrl })
  let accounts = 0

  const createAccount = async (profile = {}) => {
    accounts += 1
    const agent = new AtpAgent({ service: serviceUrl })
    const handle = `user${accounts}.test`
    const password = `password-${accounts}-${Date.now()}`
    await agent.createAccount({ handle, email: `${handle}@example.com`, password })
    const { data } = await agent.com.atproto.server.createAppPassword({ name: "postline" })
    if (profile.displayName !== undefined || profile.avatar) {
      const avatar = profile.avatar
        ? (await agent.uploadBlob(avatarPng, { encoding: "image/png" })).data.blob
        : undefined
      await agent.upsertProfile((existing) => ({
        ...existing,
        ...(profile.displayName !== undefined ? { displayName: profile.displayName } : {}),
        ...(avatar ? { avatar } : {})
      }))
    }
    return { did: agent.session.did, handle, password, appPassword: data.password }
  }

  const getRecord = async (uri) => {
    const [, , repo, collection, rkey] = uri.split("/")
    const { data } = await reader.com.atproto.repo.getRecord({ repo, collection, rkey })
    return data.value
  }

  /** The user revokes Postline's app password at the PDS: logging in with it fails from now on. */
  const revokeAppPassword = async (account) => {
    const agent = new AtpAgent({ service: serviceUrl })
    await agent.login({ identifier: account.handle, password: account.password })
    await agent.com.atproto.server.revokeAppPassword({ name: "postline" })
  }

  return { serviceUrl, createAccount, getRecord, revokeAppPassword }
}

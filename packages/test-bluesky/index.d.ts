export interface TestAccount {
  readonly did: string
  readonly handle: string
  /** The account's main password: Postline is given the app password only. */
  readonly password: string
  readonly appPassword: string
}

export interface BlueskyNetwork {
  /** The PDS's address, e.g. `http://localhost:41234`. */
  readonly serviceUrl: string
  /** The PLC directory's address, where the accounts' did:plc documents are. */
  readonly plcUrl: string
  /** A new account `userN.test` with an app password, and optionally a display name and an avatar. */
  readonly createAccount: (profile?: { readonly displayName?: string; readonly avatar?: boolean }) => Promise<TestAccount>
  /** The record at an `at://` URI, read from the PDS. */
  readonly getRecord: (uri: string) => Promise<Record<string, unknown>>
  /** The user revokes Postline's app password at the PDS: logging in with it fails from now on. */
  readonly revokeAppPassword: (account: TestAccount) => Promise<void>
  readonly close: () => Promise<void>
}

/** A PLC and a PDS in this process, on free ports of localhost; `rateLimits` turns the PDS's rate limits on. */
export declare const startBlueskyNetwork: (options?: { readonly rateLimits?: boolean }) => Promise<BlueskyNetwork>

export interface BlueskyNetworkWithAppView extends BlueskyNetwork {
  /** The AppView's address: the PDS hands it app.bsky.* calls. */
  readonly appViewUrl: string
  /** `account` likes, reposts the post at `uri`, or follows `did` (written to its repository on the PDS). */
  readonly like: (account: TestAccount, uri: string) => Promise<void>
  readonly repost: (account: TestAccount, uri: string) => Promise<void>
  readonly follow: (account: TestAccount, did: string) => Promise<void>
  /** `account` posts `text`; replies to, or quotes, the post at `uri` with it. */
  readonly post: (account: TestAccount, text: string) => Promise<void>
  readonly reply: (account: TestAccount, uri: string, text: string) => Promise<void>
  readonly quote: (account: TestAccount, uri: string, text: string) => Promise<void>
  /** Waits until the AppView has indexed everything the PDS has written so far. */
  readonly processAll: () => Promise<void>
}

/**
 * A PLC, a PDS and an AppView (with its Ozone and bsync) in this process: the AppView, Ozone and bsync keep their
 * data in schemas of the PostgreSQL database at `dbPostgresUrl`, which the caller makes for this network alone and
 * drops afterwards. `redisHost` (host:port) is required by TestNetwork, though this AppView version stores nothing
 * in Redis.
 */
export declare const startBlueskyNetworkWithAppView: (options: {
  readonly dbPostgresUrl: string
  readonly redisHost: string
}) => Promise<BlueskyNetworkWithAppView>

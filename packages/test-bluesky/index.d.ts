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

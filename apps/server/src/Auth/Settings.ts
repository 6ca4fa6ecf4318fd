import { Config, Effect } from "effect"

const seconds = (name: string, fallback: number) => Config.integer(name).pipe(Config.withDefault(fallback))

/** The device login's lifetimes and limits, each a setting with its default (README, Configuration). */
export class DeviceLoginSettings extends Effect.Service<DeviceLoginSettings>()("DeviceLoginSettings", {
  effect: Effect.all({
    accessTokenLifetimeSeconds: seconds("ACCESS_TOKEN_LIFETIME_SECONDS", 60 * 60),
    refreshTokenLifetimeSeconds: seconds("REFRESH_TOKEN_LIFETIME_SECONDS", 30 * 24 * 60 * 60),
    deviceCodeLifetimeSeconds: seconds("DEVICE_CODE_LIFETIME_SECONDS", 15 * 60),
    pollingIntervalSeconds: seconds("DEVICE_POLL_INTERVAL_SECONDS", 5),
    approvalMaxFailures: seconds("APPROVAL_MAX_FAILURES", 5),
    approvalWindowSeconds: seconds("APPROVAL_WINDOW_SECONDS", 15 * 60),
    // One scrypt at a time keeps a flood of wrong passwords within 32 MiB and one core.
    passwordCheckConcurrency: Config.integer("PASSWORD_CHECK_CONCURRENCY").pipe(
      Config.withDefault(1),
      Config.validate({ message: "PASSWORD_CHECK_CONCURRENCY must be a positive integer", validation: (n) => n > 0 })
    )
  })
}) {}

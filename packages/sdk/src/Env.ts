/** The process's environment, where there is one (it is read only when the caller gives no `env`). */
export const processEnv = (): Record<string, string | undefined> =>
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {}

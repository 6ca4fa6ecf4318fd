const loopbackHosts = new Set(["127.0.0.1", "[::1]", "localhost"])

/** Whether the address is of this machine's loopback, over http. */
export const isLoopback = (address: string): boolean => {
  const url = URL.parse(address)
  return url !== null && url.protocol === "http:" && loopbackHosts.has(url.hostname)
}

/**
 * Where a connect may send the person's browser when it ends: an address of this server (`origin`), or a loopback
 * one over http, where a program on the person's own machine listens (RFC 8252, 7.3). Never anywhere else: the
 * callback would be an open redirect.
 */
export const returnToAllowed = (returnTo: string, origin: string): boolean => {
  const url = URL.parse(returnTo)
  if (url === null || url.username !== "" || url.password !== "") return false
  return url.origin === new URL(origin).origin || isLoopback(returnTo)
}

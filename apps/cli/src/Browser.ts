import { Effect } from "effect"
import { spawn } from "node:child_process"

/** The system's command that opens an address in the default browser, where this machine likely has one. */
const openerOf = (url: string): readonly [string, ReadonlyArray<string>] | undefined => {
  switch (process.platform) {
    case "darwin":
      return ["open", [url]]
    case "win32":
      // Not `cmd /c start`: cmd would read an `&` of the address as the end of the command.
      return ["rundll32", ["url.dll,FileProtocolHandler", url]]
    default:
      // Only in a desktop session: a console alone (ssh, a server) has no browser to open.
      return (process.env.DISPLAY || process.env.WAYLAND_DISPLAY) ? ["xdg-open", [url]] : undefined
  }
}

/**
 * Opens an http(s) address in the person's browser, without waiting for the browser: whether the opener started.
 * It failing to is no error, as the address is printed too.
 */
export const openInBrowser = (url: string): Effect.Effect<boolean> =>
  Effect.async<boolean>((resume) => {
    const parsed = URL.parse(url)
    const opener = parsed?.protocol === "https:" || parsed?.protocol === "http:" ? openerOf(parsed.href) : undefined
    if (opener === undefined) return resume(Effect.succeed(false))
    const child = spawn(opener[0], opener[1], { detached: true, stdio: "ignore" })
    child.once("spawn", () => resume(Effect.succeed(true)))
    child.once("error", () => resume(Effect.succeed(false)))
    child.unref()
  })

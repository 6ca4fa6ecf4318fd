import { BadGateway, BadRequest, type ImportAsset, PayloadTooLarge, type TeamId } from "@postline/domain"
import { Effect } from "effect"
import * as Path from "node:path"
import { authorize } from "../Access/Authorization.js"
import { configuredOutbound, Outbound } from "../Outbound/Outbound.js"
import type { OutboundError } from "../Outbound/OutboundError.js"
import { nameFromFile } from "./Form.js"
import { AssetsPolicy } from "./Policy.js"
import { Assets, scopedWorkDir } from "./Service.js"
import { MediaSettings } from "./Settings.js"
import { spool } from "./Spool.js"

// Long enough for a large video from a slow host; the guard's connect timeout still applies.
const importTimeoutMillis = 120_000

/**
 * The outbound guard, configured as the providers' (`OUTBOUND_ALLOW_PRIVATE`): only `https:` addresses on the
 * public internet, redirects not followed. Its own instance, for its own timeout.
 */
const ImportGuardLive = configuredOutbound(importTimeoutMillis)

/** What the caller is told: an address refused is theirs to fix (400), a host that failed is not (502). */
const refusalOf = (error: OutboundError) =>
  error.reason === "timeout" || error.reason === "network"
    ? new BadGateway({ message: `The file could not be fetched: ${error.message}` })
    : new BadRequest({ message: `The file cannot be fetched: ${error.message}`, reason: "url_not_callable" })

/** The URL's last path segment, as a file's name, if it makes one. */
const fileNameOf = (url: string) => {
  const segment = new URL(url).pathname.split("/").pop() ?? ""
  try {
    return nameFromFile(decodeURIComponent(segment))
  } catch {
    return nameFromFile(segment)
  }
}

/** Imports: the server fetches a file from a URL and saves it as an upload. */
export class AssetImports extends Effect.Service<AssetImports>()("Assets/Imports", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound
    const policy = yield* AssetsPolicy
    const assets = yield* Assets
    const settings = yield* MediaSettings

    /**
     * The answer is spooled as it arrives (`spool`): its type is read from its first bytes and its kind's limit
     * stops it as soon as it is passed, which ends the fetch. A Content-Length past every limit is refused unread.
     */
    const importFrom = (teamId: TeamId, { url, ...fields }: ImportAsset) =>
      authorize(policy.canWrite(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          const answer = yield* Effect.mapError(outbound.stream(url), refusalOf)
          const host = new URL(url).host
          if (answer.status < 200 || answer.status > 299) {
            return yield* new BadGateway({ message: `The file could not be fetched: ${host} answered ${answer.status}` })
          }
          if (Number(answer.headers.get("content-length") ?? 0) > settings.maxVideoBytes) {
            return yield* new PayloadTooLarge({ message: `${host} announces more than ${settings.maxVideoBytes} bytes` })
          }
          const path = Path.join(yield* scopedWorkDir(settings.workDir), "import")
          const file = yield* spool(answer.body, path, settings).pipe(Effect.catchTag("OutboundError", (error) => Effect.fail(refusalOf(error))))
          return yield* assets.ingest(teamId, file, { fields, fileName: fileNameOf(url) })
        }).pipe(Effect.scoped))

    return { importFrom } as const
  }),
  dependencies: [ImportGuardLive, AssetsPolicy.Default, MediaSettings.Default, Assets.Default]
}) {}

import { Effect } from "effect"
import { PublishEstimate } from "./Estimate.js"
import { PostNow } from "./PostNow.js"
import { PublishPreparation } from "./Prepare.js"
import { Unpublishing } from "./Unpublish.js"

/**
 * Publishing a post to accounts, as the posts' API and scheduling ask for it: the checks before anything is
 * sent and the credits held for what is sent (Prepare.ts), the provider calls (Send.ts), and the record of
 * each (Outcome.ts); and taking a published post down (Unpublish.ts). The scheduler and the recovery send through `TargetSender` and `SendOutcomes` directly.
 */
export class Publishing extends Effect.Service<Publishing>()("Publishing", {
  effect: Effect.gen(function*() {
    const { postNow, postNowAnswer } = yield* PostNow
    const { estimate } = yield* PublishEstimate
    const { accountsOf, prepare, releaseWaiting } = yield* PublishPreparation
    const { unpublish, unpublishAnswer } = yield* Unpublishing
    return { postNow, postNowAnswer, estimate, accountsOf, prepare, releaseWaiting, unpublish, unpublishAnswer } as const
  }),
  dependencies: [PostNow.Default, PublishEstimate.Default, PublishPreparation.Default, Unpublishing.Default]
}) {}

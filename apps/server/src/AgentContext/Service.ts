import { Caller, CurrentCaller, type SetAgentDefaults } from "@postline/domain"
import { Effect } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { AgentContextPolicy } from "./Policy.js"
import { AgentContextRepo } from "./Repo.js"

/** What an agent needs to start: who it acts for, where it may act, and where by default. */
export class AgentContexts extends Effect.Service<AgentContexts>()("AgentContexts", {
  effect: Effect.gen(function*() {
    const repo = yield* AgentContextRepo
    const policy = yield* AgentContextPolicy

    const read = authorize(policy.canRead)((caller) =>
      Effect.map(repo.read(caller), (context) => ({ user: Caller.$is("User")(caller) ? caller.user : null, ...context })))

    const saveDefaults = (choice: SetAgentDefaults) =>
      authorize(policy.canChoose(choice))(() => Effect.flatMap(CurrentCaller, (caller) => repo.save(caller, choice)))
        .pipe(transactionally)

    return { read, saveDefaults } as const
  }),
  dependencies: [AgentContextRepo.Default, AgentContextPolicy.Default]
}) {}

import { Context } from "effect"

/**
 * Whether this process is the only one on its database (the embedded one opens it alone): what an earlier
 * process left unfinished is then a dead process's, to be finished at once.
 */
export class SoleProcess extends Context.Reference<SoleProcess>()("SoleProcess", { defaultValue: () => false }) {}

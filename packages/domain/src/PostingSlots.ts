import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { invalidUnless, strict } from "./Fields.js"
import { TeamId } from "./Ids.js"

export const maxPostingSlots = 50

const weekdayDescription = "ISO weekday: 1 Monday, 2 Tuesday, … 7 Sunday"

export const Weekday = Schema.Number.pipe(
  Schema.filter((n) => Number.isInteger(n) && n >= 1 && n <= 7, {
    jsonSchema: { type: "integer", minimum: 1, maximum: 7, description: weekdayDescription }
  })
).annotations({
  identifier: "Weekday",
  description: weekdayDescription,
  ...invalidUnless("must be an integer from 1 (Monday) to 7 (Sunday)")
})

export const SlotTime = Schema.String.pipe(Schema.pattern(/^(?:[01][0-9]|2[0-3]):[0-5][0-9]$/)).annotations({
  identifier: "SlotTime",
  description: "A wall-clock time HH:MM, 00:00 to 23:59, in the team's timezone",
  ...invalidUnless("must be a time HH:MM from 00:00 to 23:59")
})

export const PostingSlot = Schema.Struct({
  weekday: Weekday,
  time: SlotTime
}).annotations({ ...strict, identifier: "PostingSlot", description: "A weekly time to publish at" })
export type PostingSlot = typeof PostingSlot.Type

const slotKey = (slot: PostingSlot) => `${slot.weekday} ${slot.time}`

const Slots = Schema.Array(PostingSlot).pipe(
  Schema.filter(
    (slots) => slots.length <= maxPostingSlots && new Set(slots.map(slotKey)).size === slots.length,
    { jsonSchema: { maxItems: maxPostingSlots, uniqueItems: true } }
  )
).annotations({
  description: `At most ${maxPostingSlots} distinct slots`,
  message: () => `must be at most ${maxPostingSlots} distinct slots`
})

export const TeamPostingSlots = Schema.Struct({
  slots: Schema.Array(PostingSlot).annotations({
    description: "By weekday, then time. Times are wall-clock times in the team's timezone (UTC when it has none)"
  })
}).annotations({ identifier: "PostingSlots", description: "A team's weekly posting slots" })
export type TeamPostingSlots = typeof TeamPostingSlots.Type

export const SetPostingSlots = Schema.Struct({ slots: Slots }).annotations({
  ...strict,
  identifier: "SetPostingSlots",
  description: "The team's whole list of slots, which replaces the one it had"
})
export type SetPostingSlots = typeof SetPostingSlots.Type

const teamPath = Schema.Struct({ teamId: TeamId })

export class PostingSlotsGroup extends HttpApiGroup.make("postingSlots")
  .add(
    HttpApiEndpoint.get("getPostingSlots", "/v1/teams/:teamId/posting-slots")
      .setPath(teamPath)
      .addSuccess(TeamPostingSlots)
      .annotate(OpenApi.Summary, "Get posting slots")
      .annotate(
        OpenApi.Description,
        "The team's weekly posting slots, wall-clock times in its timezone (UTC when it has none). A post scheduled " +
          "for the next slot goes to the first of them after now that no scheduled post of the team holds."
      )
  )
  .add(
    HttpApiEndpoint.put("setPostingSlots", "/v1/teams/:teamId/posting-slots")
      .setPath(teamPath)
      .setPayload(SetPostingSlots)
      .addSuccess(TeamPostingSlots)
      .annotate(OpenApi.Summary, "Set posting slots")
      .annotate(
        OpenApi.Description,
        `Replaces the team's whole list of slots (0 to ${maxPostingSlots}, distinct) and answers it. A slot in an ` +
          "hour that summer time skips is taken at the end of the gap; one in an hour repeated is its first " +
          "occurrence. Only an admin or owner of the organization, or its API key, may."
      )
  )
  .annotate(OpenApi.Title, "postingSlots")
  .annotate(OpenApi.Description, "A team's weekly times to publish at")
{}

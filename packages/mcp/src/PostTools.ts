import {
  CreatePost,
  Estimate,
  optional,
  Post,
  PostList,
  PostListQuery,
  PostNowResponse,
  ScheduleRequest,
  ScheduleResponse,
  TargetAccounts,
  UnpublishRequest,
  UnpublishResponse,
  UpdatePost
} from "@postline/domain"
import { apiTool, idempotencyKey, idempotentAnswer, paged, postFields, reads, teamFields } from "./ApiTool.js"

const [scheduleAt, scheduleInNextSlot] = ScheduleRequest.members

/** What create_post and update_post tell an agent of the body beyond the text. */
const bodyParts = "A thread: content is its first part and thread the parts after it, in order (at most 24), each " +
  "published as a reply to the one before. A first comment (firstComment): a reply posted right after the post " +
  "(after its last part), whose failure does not fail the post. Versions: for an account that should get other " +
  "text, media or thread, one { socialAccountId, content?, media?, thread? } per account; what it leaves out is the " +
  "post's. Every part and the first comment cost one publish each on every account: estimate_post shows publishes " +
  "and any problem (a part too long for a network) per account."

export const CreatePostTool = apiTool("create_post", {
  title: "Create a draft post",
  description: "Creates a draft post in a team; nothing is published. Give its content and, optionally, the " +
    "accounts it is meant for (ids from list_social_accounts) and media (asset ids from list_assets or " +
    `import_asset_from_url). ${bodyParts} Publish it with post_now or schedule_post.`,
  parameters: { ...teamFields, ...CreatePost.fields },
  success: Post,
  hints: { readonly: false, destructive: false, idempotent: false, openWorld: false }
})

export const UpdatePostTool = apiTool("update_post", {
  title: "Change a draft post",
  description: "Changes a draft post: only the fields given (content, socialAccountIds, media, linkTracking, " +
    "thread, firstComment, versions) change, and a list given replaces the post's whole: thread [] makes it a " +
    "single post again, firstComment null removes the comment, versions [] removes the versions. A post that was " +
    "published or scheduled cannot be changed (Conflict): unschedule it first.",
  parameters: { ...postFields, ...UpdatePost.fields },
  success: Post,
  hints: { readonly: false, destructive: true, idempotent: true, openWorld: false }
})

export const GetPost = apiTool("get_post", {
  title: "Get a post",
  description: "One post of the team, with its status and what became of it on each account (targets: the " +
    "published post's url, or the error). Use it to follow a scheduled or publishing post.",
  parameters: postFields,
  success: Post,
  hints: reads
})

export const ListPosts = apiTool("list_posts", {
  title: "List posts",
  description: "The team's posts, newest first by default, a page at a time; filter by status or socialAccountId.",
  parameters: { ...teamFields, ...PostListQuery.fields, ...paged },
  success: PostList,
  hints: reads
})

export const EstimatePost = apiTool("estimate_post", {
  title: "Estimate a publish's cost",
  description: "What publishing a post to these accounts would cost in credits, per account, and whether the " +
    "organization has enough (sufficient). Changes nothing. Call it before post_now or schedule_post and tell " +
    "the user the cost.",
  parameters: { ...postFields, ...TargetAccounts.fields },
  success: Estimate,
  hints: reads
})

export const PostNow = apiTool("post_now", {
  title: "Publish a post now",
  description: "Publishes the post to these accounts now and answers one result per account (published with its " +
    "url, failed with the reason, or pending while the network's answer is awaited) and an outcome. It spends " +
    "the organization's credits: estimate first with estimate_post, tell the user the cost and publish only " +
    "once they agree. To retry after a timeout or an error, call again with the idempotencyKey of the result " +
    "(or the one you gave): the first answer is replayed instead of publishing twice. Accounts that failed are " +
    "retried with a new key and only those accounts.",
  parameters: { ...postFields, ...TargetAccounts.fields, idempotencyKey },
  success: idempotentAnswer(PostNowResponse.fields, "PostNowResult"),
  hints: { readonly: false, destructive: false, idempotent: false, openWorld: true }
})

export const SchedulePost = apiTool("schedule_post", {
  title: "Schedule a post",
  description: "Schedules the post to be published to these accounts at scheduledAt (an ISO 8601 instant with an " +
    "offset, at least 10 seconds and at most a year ahead) or in the team's next free posting slot (slot: " +
    "\"next\", see list_posting_slots): give exactly one of them. The credits are held now: estimate first with " +
    "estimate_post, tell the user the cost and schedule only once they agree. Scheduling a scheduled post moves " +
    "it. Retry with the same idempotencyKey, as for post_now.",
  parameters: {
    ...postFields,
    socialAccountIds: scheduleAt.fields.socialAccountIds,
    scheduledAt: optional(scheduleAt.fields.scheduledAt),
    slot: optional(scheduleInNextSlot.fields.slot),
    idempotencyKey
  },
  success: idempotentAnswer(ScheduleResponse.fields, "ScheduleResult"),
  hints: { readonly: false, destructive: false, idempotent: false, openWorld: true }
})

export const UnschedulePost = apiTool("unschedule_post", {
  title: "Unschedule a post",
  description: "Returns a scheduled post to draft and releases the credits it held; nothing is published. Once " +
    "its publishing has begun, Conflict.",
  parameters: postFields,
  success: Post,
  hints: { readonly: false, destructive: true, idempotent: true, openWorld: false }
})

export const UnpublishPost = apiTool("unpublish_post", {
  title: "Delete a post from the networks",
  description: "Takes a published post down from the networks: every part of a thread and its first comment, from " +
    "the accounts given in socialAccountIds or, without it, from every account it is published to. It cannot be " +
    "undone, and the credits spent publishing it are NOT given back: tell the user both and delete only once they " +
    "agree. Answers one result per account (deleted; failed with the reason; deleting while the network's answer is " +
    "awaited, which get_post follows) and an outcome; the post becomes deleted once every account took it down. An " +
    "account it is not published to (still being sent, failed, already deleted) gives Conflict and nothing is " +
    "deleted. To retry after a timeout or an error, call again with the idempotencyKey of the result (or the one " +
    "you gave): the first answer is replayed.",
  parameters: { ...postFields, ...UnpublishRequest.fields, idempotencyKey },
  success: idempotentAnswer(UnpublishResponse.fields, "UnpublishPostResult"),
  // Deleting again does nothing more (Conflict): idempotent, as unschedule_post is.
  hints: { readonly: false, destructive: true, idempotent: true, openWorld: true }
})

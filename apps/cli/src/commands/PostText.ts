import type { Post, PostMedium, PostPart, PostTarget, PostVersion } from "@postline/domain"
import { type Column, fields, orDash, table } from "../Table.js"

/** How a post reads for people (`posts show`, and the commands that answer a post): its body, then its results. */

const mediaText = (media: ReadonlyArray<PostMedium>) => media.length === 0 ? "-" : media.map((medium) => medium.assetId).join(", ")

/** A part of the body under its heading, its media after it when it has some. */
const partText = (heading: string, part: PostPart) =>
  [`${heading}:`, part.content, ...(part.media.length === 0 ? [] : [`(media: ${mediaText(part.media)})`])].join("\n")

/** The thread's parts after the first, numbered as the network shows them: the post's own text is part 1. */
const threadText = (thread: ReadonlyArray<PostPart>) => thread.map((part, i) => partText(`Part ${i + 2}`, part))

/** What one account gets instead of the post's body: each field it replaces; the rest is the post's. */
const versionText = (version: PostVersion) =>
  [
    `Version for ${version.socialAccountId}:`,
    version.content ?? "(the post's text)",
    ...(version.media === null ? [] : [`(media: ${mediaText(version.media)})`]),
    ...(version.thread === null
      ? []
      : version.thread.length === 0
      ? ["(no thread)"]
      : version.thread.map((part, i) => `Part ${i + 2}: ${part.content}${part.media.length === 0 ? "" : ` (media: ${mediaText(part.media)})`}`))
  ].join("\n")

const errorText = (target: PostTarget) => target.error === null ? "-" : `${target.error.category}: ${target.error.message}`

const firstCommentStatus = (target: PostTarget) =>
  target.firstComment === null
    ? "-"
    : target.firstComment.status === "failed"
    ? `failed: ${orDash(target.firstComment.error)}`
    : target.firstComment.status

/** One row per part that went out, and one for the first comment: where each is on the network. */
const publishedParts = (targets: ReadonlyArray<PostTarget>) =>
  targets.flatMap((target) => [
    ...target.parts.map((part) => ({ account: target.socialAccountId, part: String(part.position), url: part.url, externalId: part.externalId })),
    ...(target.firstComment === null
      ? []
      : [{ account: target.socialAccountId, part: "first comment", url: target.firstComment.url, externalId: target.firstComment.externalId }])
  ])

/** The results table: a column for the parts and the first comment only once a thread or a comment went out. */
const resultColumns = (targets: ReadonlyArray<PostTarget>): ReadonlyArray<Column<PostTarget>> => [
  { header: "account", value: (target) => target.socialAccountId },
  { header: "status", value: (target) => target.status },
  { header: "credits", value: (target) => String(target.creditsSpent) },
  ...(targets.some((target) => target.parts.length > 1) ? [{ header: "parts", value: (target: PostTarget) => String(target.parts.length) }] : []),
  ...(targets.some((target) => target.firstComment !== null) ? [{ header: "first comment", value: firstCommentStatus }] : []),
  ...(targets.some((target) => target.deletedAt !== null) ? [{ header: "deleted at", value: (target: PostTarget) => orDash(target.deletedAt) }] : []),
  { header: "url", value: (target) => orDash(target.url) },
  { header: "error", value: errorText }
]

/** A post for people: its fields, its text and the rest of its body, then one line per account it was sent to. */
export const postText = (post: Post) => {
  const parts = publishedParts(post.targets)
  const showParts = post.targets.some((target) => target.parts.length > 1 || target.firstComment !== null)
  return [
    fields([
      ["Id", post.id],
      ["Team", post.teamId],
      ["Status", post.status],
      ["Scheduled at", orDash(post.scheduledAt)],
      ["Accounts", post.socialAccountIds.length === 0 ? "-" : post.socialAccountIds.join(", ")],
      ["Media", mediaText(post.media)],
      ["Thread", post.thread.length === 0 ? "-" : `${post.thread.length + 1} parts`],
      ["First comment", post.firstComment === null ? "-" : "yes"],
      ["Versions", post.versions.length === 0 ? "-" : post.versions.map((version) => version.socialAccountId).join(", ")],
      ["Created", post.createdAt],
      ["Updated", post.updatedAt]
    ]),
    "",
    post.content,
    ...[
      ...threadText(post.thread),
      ...(post.firstComment === null ? [] : [partText("First comment", post.firstComment)]),
      ...post.versions.map(versionText)
    ].flatMap((block) => ["", block]),
    "",
    "Results per account:",
    table(resultColumns(post.targets), post.targets),
    ...(showParts
      ? [
        "",
        "Published parts:",
        table([
          { header: "account", value: (row) => row.account },
          { header: "part", value: (row) => row.part },
          { header: "id", value: (row) => orDash(row.externalId) },
          { header: "url", value: (row) => orDash(row.url) }
        ], parts)
      ]
      : [])
  ].join("\n")
}

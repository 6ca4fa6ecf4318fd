import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { integer, oneOf, strict, Timestamp } from "./Fields.js"
import { PostId, TeamId } from "./Ids.js"
import { ListEnvelope, listQueryFieldsSortedBy } from "./Lists.js"

export const PostLink = Schema.Struct({
  code: Schema.String.annotations({ description: "The short link's code" }),
  url: Schema.String.annotations({ description: "The link as written in the post, where the short link leads" }),
  shortUrl: Schema.NullOr(Schema.String).annotations({
    description: "<PUBLIC_URL>/l/<code>, which the post was sent with; null while the server has no PUBLIC_URL"
  }),
  clicks: integer("How many times the short link was followed"),
  createdAt: Timestamp
}).annotations({
  identifier: "PostLink",
  description: "A tracked link of a post: one per distinct URL, made when the post was first published"
})
export type PostLink = typeof PostLink.Type

export const PostLinkSortField = oneOf("createdAt").annotations({
  identifier: "PostLinkSortField",
  description: "Links sort by when they were made; ties by id"
})

export const PostLinkListQuery = Schema.Struct(listQueryFieldsSortedBy(PostLinkSortField)).annotations(strict)
export type PostLinkListQuery = typeof PostLinkListQuery.Type

export const PostLinkList = ListEnvelope(PostLink, "PostLinkList")

export class LinksGroup extends HttpApiGroup.make("links")
  .add(
    HttpApiEndpoint.get("listPostLinks", "/v1/teams/:teamId/posts/:postId/links")
      .setPath(Schema.Struct({ teamId: TeamId, postId: PostId }))
      .setUrlParams(PostLinkListQuery)
      .addSuccess(PostLinkList)
      .annotate(OpenApi.Summary, "List post links")
      .annotate(
        OpenApi.Description,
        "The tracked links of a post, with their clicks. When a post's link tracking is on (its own linkTracking, " +
          "else the team's linkTrackingDefault), each http(s) link in it is sent as a short link " +
          "<PUBLIC_URL>/l/<code>, which redirects to the link as written and counts the click. Any member may see them."
      )
  )
  .annotate(OpenApi.Title, "links")
  .annotate(OpenApi.Description, "Tracked links of posts and their clicks")
{}

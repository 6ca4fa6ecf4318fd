import { Effect } from "effect"
import { policy } from "../Access/Authorization.js"

/**
 * Following a short link takes no caller: its code, unguessable, was published
 * in a post, and whoever reads the post may follow it. Reading a post's links
 * is reading the post (PostsPolicy.canRead); making them is publishing it.
 */
export class LinksPolicy extends Effect.Service<LinksPolicy>()("Links/Policy", {
  succeed: {
    canFollow: policy("Link", "follow")(Effect.void)
  }
}) {}

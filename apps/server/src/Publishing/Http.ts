import { HttpApiBuilder } from "@effect/platform"
import {
  Estimate,
  Post,
  PostList,
  PostlineApi,
  PostNowResponse,
  PublishAttemptList,
  ScheduleResponse,
  UnpublishResponse
} from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { Idempotency } from "../Idempotency/Service.js"
import { Posts } from "../Posts/Service.js"
import { Scheduling } from "./Scheduling.js"
import { isFinalAnswer } from "./PostNow.js"
import { Publishing } from "./Service.js"
import { isFinalUnpublish } from "./Unpublish.js"

/**
 * The posts group: a post's life, from draft to schedule and publish, is one story, told by the publishing
 * feature over the posts' own service.
 */
export const PostsHttpLive = HttpApiBuilder.group(PostlineApi, "posts", (handlers) =>
  Effect.gen(function*() {
    const posts = yield* Posts
    const publishing = yield* Publishing
    const idempotency = yield* Idempotency
    const scheduling = yield* Scheduling
    return handlers
      .handle("listPosts", ({ path, urlParams }) => Effect.map(posts.list(path.teamId, urlParams), asEncoded(PostList)))
      .handle("createPost", ({ path, payload }) =>
        Effect.map(posts.create(path.teamId, payload), asEncoded(Post, { status: 201 })))
      .handle("getPost", ({ path }) => Effect.map(posts.get(path.teamId, path.postId), asEncoded(Post)))
      .handle("updatePost", ({ path, payload }) =>
        Effect.map(posts.update(path.teamId, path.postId, payload), asEncoded(Post)))
      .handle("deletePost", ({ path }) => Effect.map(posts.remove(path.teamId, path.postId), asEncoded(Post)))
      .handle("postNow", ({ headers, path, payload }) =>
        idempotency.respond(
          { operation: "posts.postNow", key: headers["idempotency-key"], request: { path, payload } },
          PostNowResponse,
          publishing.postNow(path.teamId, path.postId, payload),
          {
            final: isFinalAnswer,
            resume: (startedAt) => publishing.postNowAnswer(path.teamId, path.postId, payload, startedAt)
          }
        ))
      .handle("schedulePost", ({ headers, path, payload }) =>
        idempotency.respond(
          { operation: "posts.schedulePost", key: headers["idempotency-key"], request: { path, payload } },
          ScheduleResponse,
          scheduling.schedule(path.teamId, path.postId, payload)
        ))
      .handle("unschedulePost", ({ path }) => Effect.map(scheduling.unschedule(path.teamId, path.postId), asEncoded(Post)))
      .handle("unpublishPost", ({ headers, path, payload }) =>
        idempotency.respond(
          { operation: "posts.unpublishPost", key: headers["idempotency-key"], request: { path, payload } },
          UnpublishResponse,
          publishing.unpublish(path.teamId, path.postId, payload),
          {
            final: isFinalUnpublish,
            resume: (startedAt) => publishing.unpublishAnswer(path.teamId, path.postId, payload, startedAt)
          }
        ))
      .handle("estimatePost", ({ path, payload }) =>
        Effect.map(publishing.estimate(path.teamId, path.postId, payload), asEncoded(Estimate)))
      .handle("listPublishAttempts", ({ path, urlParams }) =>
        Effect.map(posts.attempts(path.teamId, path.postId, urlParams), asEncoded(PublishAttemptList)))
  })).pipe(Layer.provide([Posts.Default, Publishing.Default, Scheduling.Default, Idempotency.Default]))

import { HttpApiBuilder } from "@effect/platform"
import { PostlineApi, Team, TeamList } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { Teams } from "./Service.js"

export const TeamsHttpLive = HttpApiBuilder.group(PostlineApi, "teams", (handlers) =>
  Effect.gen(function*() {
    const teams = yield* Teams
    return handlers
      .handle("listTeams", ({ urlParams }) => Effect.map(teams.list(urlParams), asEncoded(TeamList)))
      .handle("createTeam", ({ payload }) => Effect.map(teams.create(payload), asEncoded(Team, { status: 201 })))
      .handle("getTeam", ({ path }) => Effect.map(teams.get(path.teamId), asEncoded(Team)))
      .handle("updateTeam", ({ path, payload }) => Effect.map(teams.update(path.teamId, payload), asEncoded(Team)))
  })).pipe(Layer.provide(Teams.Default))

import { HttpApiBuilder, HttpApiScalar, HttpMiddleware } from "@effect/platform"
import { PostlineApi } from "@postline/domain"
import { Layer } from "effect"
import { AccessPolicy } from "../Access/Policy.js"
import { AgentContextHttpLive } from "../AgentContext/Http.js"
import { AgentContextRepo } from "../AgentContext/Repo.js"
import { ApiKeysHttpLive } from "../ApiKeys/Http.js"
import { ApiKeysRepo } from "../ApiKeys/Repo.js"
import { DeviceAuthorizationsRepo } from "../Auth/DeviceAuthorizationsRepo.js"
import { DevicePageLive } from "../Auth/DevicePage.js"
import { AuthHttpLive } from "../Auth/Http.js"
import { LoginsRepo } from "../Auth/LoginsRepo.js"
import { HealthHttpLive } from "../Health/Http.js"
import { MembersHttpLive } from "../Members/Http.js"
import { MembersRepo } from "../Members/Repo.js"
import { OrganizationsHttpLive } from "../Organizations/Http.js"
import { OrganizationsRepo } from "../Organizations/Repo.js"
import { Cursors } from "../Pagination/Cursor.js"
import { TeamsHttpLive } from "../Teams/Http.js"
import { TeamsRepo } from "../Teams/Repo.js"
import { AuthenticationLive } from "../Users/Authentication.js"
import { UsersRepo } from "../Users/Repo.js"
import { ErrorBodiesLive } from "./ErrorBodies.js"
import { JsonBodyLive } from "./JsonBody.js"

const ApiLive = HttpApiBuilder.api(PostlineApi).pipe(
  Layer.provide([
    OrganizationsHttpLive,
    TeamsHttpLive,
    MembersHttpLive,
    ApiKeysHttpLive,
    AgentContextHttpLive,
    AuthHttpLive,
    HealthHttpLive
  ]),
  Layer.provide([AuthenticationLive, JsonBodyLive]),
  Layer.provide([
    AccessPolicy.Default,
    AgentContextRepo.Default,
    ApiKeysRepo.Default,
    DeviceAuthorizationsRepo.Default,
    LoginsRepo.Default,
    OrganizationsRepo.Default,
    TeamsRepo.Default,
    MembersRepo.Default,
    UsersRepo.Default,
    Cursors.Default
  ])
)

/**
 * The whole HTTP application: the API, its error bodies, `/openapi.json`,
 * `/docs` and the device approval page, with an access log line per request
 * or without. Needs an `HttpServer` and a `SqlClient`.
 */
export const makeHttpLive = (options: { readonly accessLog: boolean }) =>
  (options.accessLog ? HttpApiBuilder.serve(HttpMiddleware.logger) : HttpApiBuilder.serve()).pipe(
    Layer.provide(ErrorBodiesLive),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
    Layer.provide(DevicePageLive),
    Layer.provide(ApiLive)
  )


import { HttpApiBuilder } from "@effect/platform"
import { PostlineApi } from "@postline/domain"
import { Layer } from "effect"
import { ConnectCallbackLive } from "./AccountConnects/Callback.js"
import { AccountConnectsHttpLive } from "./AccountConnects/Http.js"
import { AgentContextHttpLive } from "./AgentContext/Http.js"
import { AnalyticsHttpLive } from "./Analytics/Http.js"
import { ApiKeysHttpLive } from "./ApiKeys/Http.js"
import { MediaHttpLive } from "./Assets/Http.js"
import { DevicePageLive } from "./Auth/DevicePage.js"
import { BillingHttpLive } from "./Billing/Http.js"
import { PaymentEventsHttpLive } from "./Billing/PaymentEvents/Http.js"
import { FoldersHttpLive } from "./Folders/Http.js"
import { AuthHttpLive } from "./Auth/Http.js"
import { CreditsHttpLive } from "./Credits/Http.js"
import { EventWebhooksHttpLive } from "./EventWebhooks/Http.js"
import { HealthHttpLive } from "./Health/Http.js"
import { LinksHttpLive } from "./Links/Http.js"
import { LinkRedirectLive } from "./Links/Redirect.js"
import { McpHttpLive } from "./Mcp/Http.js"
import { MembersHttpLive } from "./Members/Http.js"
import { OrganizationsHttpLive } from "./Organizations/Http.js"
import { PostingSlotsHttpLive } from "./PostingSlots/Http.js"
import { ProvidersHttpLive } from "./Providers/Http.js"
import { PostsHttpLive } from "./Publishing/Http.js"
import { RateLimitMiddlewareLive } from "./RateLimits/Middleware.js"
import { SocialAccountsHttpLive } from "./SocialAccounts/Http.js"
import { TeamsHttpLive } from "./Teams/Http.js"
import { AuthenticationLive } from "./Users/Authentication.js"
import { accessLog } from "./Http/AccessLog.js"
import { DocsLive } from "./Http/Docs.js"
import { ErrorBodiesLive } from "./Http/ErrorBodies.js"
import { JsonBodyLive } from "./Http/JsonBody.js"

/** Each feature's handlers bring their own services: a new feature is one line here. */
const ApiLive = HttpApiBuilder.api(PostlineApi).pipe(
  Layer.provide([
    OrganizationsHttpLive,
    TeamsHttpLive,
    MembersHttpLive,
    ApiKeysHttpLive,
    AgentContextHttpLive,
    SocialAccountsHttpLive,
    AccountConnectsHttpLive,
    ProvidersHttpLive,
    PostsHttpLive,
    AnalyticsHttpLive,
    CreditsHttpLive,
    PostingSlotsHttpLive,
    LinksHttpLive,
    FoldersHttpLive,
    MediaHttpLive,
    EventWebhooksHttpLive,
    BillingHttpLive,
    PaymentEventsHttpLive,
    AuthHttpLive,
    HealthHttpLive
  ]),
  Layer.provide([AuthenticationLive, RateLimitMiddlewareLive, JsonBodyLive])
)

/**
 * The whole HTTP application: the API, its error bodies, `/openapi.json`,
 * `/docs`, the device approval page, the connect callback, the MCP tools at `/mcp` and the short links' redirects, with an access log line per request
 * or without. Needs an `HttpServer`, a `SqlClient`, the `CredentialsCipher` and the
 * `SocialProviders` and `OAuthNetworks` (with the outbound guard), which the edge configures.
 */
export const makeHttpLive = (options: { readonly accessLog: boolean }) =>
  (options.accessLog ? HttpApiBuilder.serve(accessLog) : HttpApiBuilder.serve()).pipe(
    Layer.provide(ErrorBodiesLive),
    Layer.provide(DocsLive),
    Layer.provide(DevicePageLive),
    Layer.provide(ConnectCallbackLive),
    Layer.provide(McpHttpLive),
    Layer.provide(LinkRedirectLive),
    Layer.provide(ApiLive)
  )

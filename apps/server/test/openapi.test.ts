import { HttpApi } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import {
  AddMember,
  BadRequestReason,
  ConflictReason,
  EventWebhookUrl,
  FolderName,
  Name,
  PaymentRequiredReason,
  PostContent,
  PostlineApi,
  SocialAccountCredentials,
  Timezone,
  WebsiteUrl
} from "@postline/domain"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Either, Option, Schema, SchemaAST } from "effect"
import { readFileSync } from "node:fs"
import { openApiPath, renderOpenApi } from "../scripts/openapi.js"

const spec = JSON.parse(renderOpenApi())

const operations = Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, operation]) => ({ path, method, operation }))
)

const contractErrors = {
  400: ["HttpApiDecodeError", "BadRequest"],
  401: ["Unauthorized"],
  402: ["PaymentRequired"],
  403: ["Forbidden"],
  404: ["NotFound"],
  409: ["Conflict"],
  429: ["TooManyRequests"],
  500: ["InternalError"]
}

/** Errors of the contract's statuses that one operation adds: the quota an upload, its start or an import may exceed. */
const operationErrors: Record<string, ReadonlyArray<string>> = {
  "assetUploads.uploadAsset 409": ["QuotaExceeded"],
  "assets.createAssetUpload 409": ["QuotaExceeded"],
  "assets.completeAssetUpload 409": ["QuotaExceeded"],
  "assets.importAsset 409": ["QuotaExceeded"],
  "billing.createCheckout 409": ["BillingDisabled"],
  "billing.createPortal 409": ["BillingDisabled"],
  "billing.updateAutoRecharge 409": ["BillingDisabled"]
}

/** Operations that no rate limit counts, which declare no 429 (rate-limits.test.ts: 429 exactly where one counts). */
const unlimitedOperations = new Set(["billingWebhooks.receiveStripeEvent"])

const refsOf = (schema: any): Array<string> =>
  (schema.anyOf ?? [schema]).map((member: any) => member.$ref.replace("#/components/schemas/", ""))

describe("the OpenAPI document", () => {
  it("is committed up to date: run `pnpm openapi` after changing the API", () => {
    expect(readFileSync(openApiPath, "utf8")).toBe(renderOpenApi())
  })

  it("is titled Postline and opens /docs with a getting-started, the rules of every request after it", () => {
    expect(spec.info.title).toBe("Postline")
    const description: string = spec.info.description
    expect(description).toMatch(/^Draft, schedule and publish social posts[^\n]*\n\n## Getting started\n\n1\. /)
    for (const step of ["pnpm admin users create", "Authorization: Bearer", "POST /v1/organizations", "post-now"]) {
      expect(description.indexOf(step), step).toBeLessThan(description.indexOf("## Every request"))
    }
    expect(description.indexOf("408 `RequestTimeout`")).toBeGreaterThan(description.indexOf("## Every request"))
  })

  it("has the contract's version, operation ids and paths", () => {
    expect(spec.info.version).toBe("0.1.0")
    expect(operations.map(({ method, operation, path }) => `${operation.operationId} ${method.toUpperCase()} ${path}`).sort())
      .toEqual([
        "accountConnects.getAccountConnect GET /v1/teams/{teamId}/social-accounts/connect/{connectId}",
        "accountConnects.startAccountConnect POST /v1/teams/{teamId}/social-accounts/connect",
        "agent.getContext GET /v1/agent/context",
        "agent.setDefaults PUT /v1/agent/context/defaults",
        "analytics.estimateAccountAnalyticsRefresh GET /v1/teams/{teamId}/social-accounts/{socialAccountId}/analytics/refresh/estimate",
        "analytics.estimatePostAnalyticsRefresh GET /v1/teams/{teamId}/posts/{postId}/analytics/refresh/estimate",
        "analytics.getAccountAnalytics GET /v1/teams/{teamId}/social-accounts/{socialAccountId}/analytics",
        "analytics.getPostAnalytics GET /v1/teams/{teamId}/posts/{postId}/analytics",
        "analytics.refreshAccountAnalytics POST /v1/teams/{teamId}/social-accounts/{socialAccountId}/analytics/refresh",
        "analytics.refreshPostAnalytics POST /v1/teams/{teamId}/posts/{postId}/analytics/refresh",
        "apiKeys.createApiKey POST /v1/organizations/{organizationId}/api-keys",
        "apiKeys.listApiKeys GET /v1/organizations/{organizationId}/api-keys",
        "apiKeys.revokeApiKey DELETE /v1/organizations/{organizationId}/api-keys/{apiKeyId}",
        "assetContent.getAssetContent GET /v1/teams/{teamId}/assets/{assetId}/content",
        "assetContent.putAssetUpload PUT /v1/uploads/{uploadId}",
        "assetUploads.uploadAsset POST /v1/teams/{teamId}/assets",
        "assets.cancelAssetUpload DELETE /v1/teams/{teamId}/assets/uploads/{uploadId}",
        "assets.completeAssetUpload POST /v1/teams/{teamId}/assets/uploads/{uploadId}/complete",
        "assets.createAssetUpload POST /v1/teams/{teamId}/assets/uploads",
        "assets.deleteAsset DELETE /v1/teams/{teamId}/assets/{assetId}",
        "assets.getAsset GET /v1/teams/{teamId}/assets/{assetId}",
        "assets.importAsset POST /v1/teams/{teamId}/assets/import",
        "assets.listAssets GET /v1/teams/{teamId}/assets",
        "assets.updateAsset PATCH /v1/teams/{teamId}/assets/{assetId}",
        "auth.authorizationServerMetadata GET /.well-known/oauth-authorization-server",
        "auth.requestDeviceCode POST /v1/auth/device/code",
        "auth.revoke POST /v1/auth/revoke",
        "auth.token POST /v1/auth/token",
        "billing.createCheckout POST /v1/organizations/{organizationId}/billing/checkout",
        "billing.createPortal POST /v1/organizations/{organizationId}/billing/portal",
        "billing.getBilling GET /v1/organizations/{organizationId}/billing",
        "billing.updateAutoRecharge PATCH /v1/organizations/{organizationId}/billing/auto-recharge",
        "billing.updateSpendCap PATCH /v1/organizations/{organizationId}/billing/spend-cap",
        "billingWebhooks.receiveStripeEvent POST /v1/billing/webhooks/stripe",
        "credits.getCredits GET /v1/organizations/{organizationId}/credits",
        "credits.listCreditTransactions GET /v1/organizations/{organizationId}/credits/transactions",
        "eventWebhooks.deleteEventWebhook DELETE /v1/organizations/{organizationId}/event-webhook",
        "eventWebhooks.getEventWebhook GET /v1/organizations/{organizationId}/event-webhook",
        "eventWebhooks.setEventWebhook PUT /v1/organizations/{organizationId}/event-webhook",
        "folders.createFolder POST /v1/teams/{teamId}/folders",
        "folders.deleteFolder DELETE /v1/teams/{teamId}/folders/{folderId}",
        "folders.getFolder GET /v1/teams/{teamId}/folders/{folderId}",
        "folders.listFolders GET /v1/teams/{teamId}/folders",
        "folders.updateFolder PATCH /v1/teams/{teamId}/folders/{folderId}",
        "health.health GET /health",
        "links.listPostLinks GET /v1/teams/{teamId}/posts/{postId}/links",
        "members.addMember POST /v1/organizations/{organizationId}/members",
        "members.listMembers GET /v1/organizations/{organizationId}/members",
        "members.removeMember DELETE /v1/organizations/{organizationId}/members/{userId}",
        "members.updateMember PATCH /v1/organizations/{organizationId}/members/{userId}",
        "organizations.createOrganization POST /v1/organizations",
        "organizations.getOrganization GET /v1/organizations/{organizationId}",
        "organizations.listOrganizations GET /v1/organizations",
        "organizations.updateOrganization PATCH /v1/organizations/{organizationId}",
        "postingSlots.getPostingSlots GET /v1/teams/{teamId}/posting-slots",
        "postingSlots.setPostingSlots PUT /v1/teams/{teamId}/posting-slots",
        "posts.createPost POST /v1/teams/{teamId}/posts",
        "posts.deletePost DELETE /v1/teams/{teamId}/posts/{postId}",
        "posts.estimatePost POST /v1/teams/{teamId}/posts/{postId}/estimate",
        "posts.getPost GET /v1/teams/{teamId}/posts/{postId}",
        "posts.listPosts GET /v1/teams/{teamId}/posts",
        "posts.listPublishAttempts GET /v1/teams/{teamId}/posts/{postId}/attempts",
        "posts.postNow POST /v1/teams/{teamId}/posts/{postId}/post-now",
        "posts.schedulePost POST /v1/teams/{teamId}/posts/{postId}/schedule",
        "posts.unpublishPost POST /v1/teams/{teamId}/posts/{postId}/unpublish",
        "posts.unschedulePost POST /v1/teams/{teamId}/posts/{postId}/unschedule",
        "posts.updatePost PATCH /v1/teams/{teamId}/posts/{postId}",
        "providers.listProviders GET /v1/providers",
        "socialAccounts.connectSocialAccount POST /v1/teams/{teamId}/social-accounts",
        "socialAccounts.getSocialAccount GET /v1/teams/{teamId}/social-accounts/{socialAccountId}",
        "socialAccounts.listSocialAccounts GET /v1/teams/{teamId}/social-accounts",
        "socialAccounts.removeSocialAccount DELETE /v1/teams/{teamId}/social-accounts/{socialAccountId}",
        "socialAccounts.updateSocialAccount PATCH /v1/teams/{teamId}/social-accounts/{socialAccountId}",
        "socialAccounts.verifySocialAccount POST /v1/teams/{teamId}/social-accounts/{socialAccountId}/verify",
        "teams.createTeam POST /v1/teams",
        "teams.getTeam GET /v1/teams/{teamId}",
        "teams.listTeams GET /v1/teams",
        "teams.updateTeam PATCH /v1/teams/{teamId}"
      ])
  })

  // A signed download's or upload's signature is its permission, and a Stripe event's.
  const isSigned = (path: string) =>
    path.endsWith("/content") || path.startsWith("/v1/uploads/") || path === "/v1/billing/webhooks/stripe"

  // The device login is how a caller gets a token, so it cannot ask for one.
  const isOpen = (path: string) =>
    path === "/health" || path.startsWith("/v1/auth/") || path.startsWith("/.well-known/") || isSigned(path)

  it("declares bearerAuth as HTTP bearer and requires it everywhere but /health and the device login", () => {
    expect(spec.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" })
    for (const { operation, path } of operations) {
      expect(operation.security, path).toEqual(isOpen(path) ? [] : [{ bearerAuth: [] }])
    }
  })

  it("describes the device login's OAuth error body and its form-encoded requests", () => {
    for (const path of ["/v1/auth/device/code", "/v1/auth/token", "/v1/auth/revoke"]) {
      const operation = spec.paths[path].post
      expect(Object.keys(operation.requestBody.content), path).toEqual(["application/x-www-form-urlencoded", "application/json"])
      expect(refsOf(operation.responses[400].content["application/json"].schema), path).toContain("OAuthError")
    }
    expect(spec.components.schemas.OAuthError.required.sort()).toEqual(["_tag", "error", "error_description", "message"])
  })

  it("describes every error of contract section 7 with its JSON body on every API operation", () => {
    for (const { operation, path } of operations.filter(({ path }) => path.startsWith("/v1"))) {
      for (const [status, tags] of Object.entries(contractErrors)) {
        if (status === "429" && unlimitedOperations.has(operation.operationId)) {
          expect(operation.responses[status], `${operation.operationId} 429`).toBeUndefined()
          continue
        }
        const schema = operation.responses[status]?.content?.["application/json"]?.schema
        expect(schema, `${operation.operationId} ${status}`).toBeDefined()
        const expected = [...tags, ...(isOpen(path) && status === "400" && !isSigned(path) ? ["OAuthError"] : []),
          ...(operationErrors[`${operation.operationId} ${status}`] ?? [])]
        expect(refsOf(schema).sort(), `${path} ${status}`).toEqual([...expected].sort())
      }
    }
    for (const tags of Object.values(contractErrors)) {
      for (const tag of tags) {
        const body = spec.components.schemas[tag]
        expect(body.required.sort(), tag).toEqual(tag === "HttpApiDecodeError" ? ["_tag", "issues", "message"] : ["_tag", "message"])
        expect(body.properties._tag.enum, tag).toEqual([tag])
      }
    }
    expect(spec.components.schemas.DecodeIssue).toMatchObject({
      required: ["path", "message"],
      properties: { path: { type: "array", items: { type: "string" } }, message: { type: "string" } }
    })
  })

  it("gives Conflict, PaymentRequired and BadRequest alone an optional `reason`, each code listed with its meaning", () => {
    const reasons: Record<string, { readonly component: string; readonly codes: ReadonlyArray<string> }> = {
      Conflict: { component: "ConflictReason", codes: ConflictReason.literals },
      PaymentRequired: { component: "PaymentRequiredReason", codes: PaymentRequiredReason.literals },
      BadRequest: { component: "BadRequestReason", codes: BadRequestReason.literals }
    }
    const errorBodies = Object.entries(spec.components.schemas as Record<string, any>)
      .filter(([, schema]) => schema.properties?._tag?.enum?.length === 1 && schema.properties.message !== undefined)
    expect(errorBodies.length).toBeGreaterThan(10)
    for (const [tag, body] of errorBodies) {
      const reason = reasons[tag]
      if (reason === undefined) {
        expect(body.properties.reason, tag).toBeUndefined()
        continue
      }
      expect(body.properties.reason, tag).toEqual({ $ref: `#/components/schemas/${reason.component}` })
      expect(body.required, tag).not.toContain("reason")
      expect(body.description, tag).toContain("`reason`")
      const codes = spec.components.schemas[reason.component]
      expect(codes.type, reason.component).toBe("string")
      expect(codes.enum, reason.component).toEqual(reason.codes)
      for (const code of codes.enum) {
        expect(code, reason.component).toMatch(/^[a-z]+(?:_[a-z0-9]+)*$/)
        expect(codes.description, `${reason.component} ${code}`).toMatch(new RegExp(`\\n- \`${code}\`: \\S`))
      }
    }
    expect(errorBodies.filter(([, body]) => body.properties.reason !== undefined).map(([tag]) => tag).sort())
      .toEqual(["BadRequest", "Conflict", "PaymentRequired"])
  })

  it("names every reason where it can be given: in its operations' descriptions, or for every request", () => {
    const descriptions = [spec.info.description, ...operations.map(({ operation }) => operation.description ?? "")].join("\n")
    const codes = [...ConflictReason.literals, ...PaymentRequiredReason.literals, ...BadRequestReason.literals]
    // email_taken is the admin command's alone (`pnpm admin users create`), outside this document.
    expect(codes.filter((code) => !descriptions.includes(`\`${code}\``))).toEqual(["email_taken"])
  })

  it("lists 408 and 431, which Node's parser answers to any request, on every operation with their { _tag, message } bodies", () => {
    const parserErrors = { 408: "RequestTimeout", 431: "RequestHeaderFieldsTooLarge" }
    expect(operations.length).toBeGreaterThan(40)
    for (const { operation } of operations) {
      for (const [status, tag] of Object.entries(parserErrors)) {
        const schema = operation.responses[status]?.content?.["application/json"]?.schema
        expect(schema, `${operation.operationId} ${status}`).toBeDefined()
        expect(refsOf(schema), `${operation.operationId} ${status}`).toEqual([tag])
      }
    }
    for (const tag of Object.values(parserErrors)) {
      expect(spec.components.schemas[tag], tag).toMatchObject({
        type: "object",
        required: expect.arrayContaining(["_tag", "message"]),
        properties: { _tag: { type: "string", enum: [tag] }, message: { type: "string" } }
      })
    }
  })

  it("describes the list query parameters and the envelope", () => {
    const list = spec.paths["/v1/teams"].get
    expect(list.parameters.map((parameter: any) => [parameter.name, parameter.required])).toEqual([
      ["organizationId", false],
      ["cursor", false],
      ["limit", false],
      ["sortBy", false],
      ["sortOrder", false]
    ])
    expect(spec.components.schemas.SortField.enum).toEqual(["createdAt", "updatedAt", "name"])
    expect(spec.components.schemas.SortOrder.enum).toEqual(["asc", "desc"])
    expect(spec.components.schemas.TeamList.required).toEqual(["data", "total", "nextCursor", "prevCursor"])
  })

  it("forbids extra properties in request bodies and gives names their bounds", () => {
    for (
      const name of [
        "CreateOrganization",
        "UpdateOrganization",
        "CreateTeam",
        "UpdateTeam",
        "OnboardingData",
        "AddMember",
        "UpdateMember",
        "CreateApiKey",
        "SetAgentDefaults",
        "SetPostingSlots",
        "PostingSlot",
        "CreateAssetUpload",
        "ImportAsset",
        "CreditPackCheckout",
        "SubscriptionCheckout",
        "PortalRequest",
        "UpdateAutoRecharge",
        "UpdateSpendCap"
      ]
    ) {
      expect(spec.components.schemas[name].additionalProperties, name).toBe(false)
    }
    expect(spec.components.schemas.Name).toMatchObject({ type: "string", minLength: 2, maxLength: 64 })
  })

  it("has no generated titles or descriptions such as maxLength(64)", () => {
    const text = JSON.stringify(spec)
    expect(text).not.toMatch(/"(title|description)":"[^"]*(maxLength|minLength|pattern)\(/)
    expect(text).not.toMatch(/a string at (least|most)/)
    expect(text).not.toMatch(/a string matching the pattern/)
    expect(JSON.stringify([spec.paths, spec.components])).not.toMatch(/"title":/)
  })
})

/** Every refinement (a filter) in what the server decodes from requests: path, query, headers and bodies. */
const requestRefinements = (): Array<{ readonly endpoint: string; readonly refinement: SchemaAST.Refinement }> => {
  const found: Array<{ endpoint: string; refinement: SchemaAST.Refinement }> = []
  const seen = new Set<SchemaAST.AST>()
  const walk = (ast: SchemaAST.AST, endpoint: string): void => {
    if (seen.has(ast)) return
    seen.add(ast)
    switch (ast._tag) {
      case "Refinement":
        found.push({ endpoint, refinement: ast })
        return walk(ast.from, endpoint)
      case "Transformation":
        return (walk(ast.from, endpoint), walk(ast.to, endpoint))
      case "TypeLiteral":
        ast.propertySignatures.forEach((property) => walk(property.type, endpoint))
        return ast.indexSignatures.forEach((index) => walk(index.type, endpoint))
      case "Union":
        return ast.types.forEach((member) => walk(member, endpoint))
      case "TupleType":
        return [...ast.elements, ...ast.rest].forEach((element) => walk(element.type, endpoint))
      case "Suspend":
        return walk(ast.f(), endpoint)
    }
  }
  HttpApi.reflect(PostlineApi, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      const schemas = [endpoint.payloadSchema, endpoint.urlParamsSchema, endpoint.pathSchema, endpoint.headersSchema]
      for (const schema of schemas) {
        if (Option.isSome(schema)) walk(schema.value.ast, `${endpoint.method} ${endpoint.path}`)
      }
    }
  })
  return found
}

const patternsIn = (value: unknown): Array<string> =>
  value === null || typeof value !== "object"
    ? []
    : Object.entries(value).flatMap(([key, inner]) => key === "pattern" ? [inner as string] : patternsIn(inner))

const ajv = new Ajv2020({ strict: false, unicodeRegExp: true })
ajv.addSchema({ $id: "openapi", components: spec.components })
const documentAccepts = (component: string, value: unknown) =>
  ajv.validate({ $ref: `openapi#/components/schemas/${component}` }, value) as boolean

// What the server refuses that a pattern does not say (whether the URL parser takes a URL's host: see httpUrlShape
// in packages/domain/src/Fields.ts) is left out: these samples are rules a schema states.
const samples: ReadonlyArray<readonly [string, Schema.Schema.Any, ReadonlyArray<unknown>]> = [
  ["Name", Name, ["Acme", "A b", "x", "  ", "\uFEFF\uFEFF", "\u001C\u001D", "\u00A0x", "\u3000\u3000", "\u200B\u200B", "a\u0000b"]],
  ["PostContent", PostContent, ["Hello", " ", "\uFEFF", "\u3000a", "\u0085", "\u001F", "\t\n"]],
  ["FolderName", FolderName, ["Photos", "a/b", " ", "\uFEFF"]],
  ["Timezone", Timezone, ["Europe/Paris", "UTC", "Etc/UTC", "Asia/Kolkata", "Mars/Olympus", "europe/paris", "Europe", ""]],
  ["WebsiteUrl", WebsiteUrl, [
    "https://example.com",
    "http://user:pw@example.com:8080/a?b#c",
    "https://例え.jp/",
    "https://[::1]:443/",
    "http://ex%41mple.com",
    "HTTPS://example.com:0065535",
    "http://",
    "http://a b",
    "http://a\u0085b",
    "http://a\uFEFF",
    "ftp://example.com"
  ]],
  ["EventWebhookUrl", EventWebhookUrl, ["https://hooks.example.com/x", "https://u@example.com/", "https://\\\\u:p@example.com"]],
  ["ConnectWebhook", SocialAccountCredentials, [
    { provider: "webhook", url: "https://example.com/hook" },
    { provider: "webhook", url: "https://u:p@example.com/" },
    { provider: "webhook", url: "https://example.com/@home" }
  ]],
  ["AddMember", AddMember, [
    { email: "ana@example.com", role: "member" },
    { email: "ana example@example.com", role: "member" },
    { email: "ana\uFEFF@example.com", role: "member" }
  ]]
]

describe("the OpenAPI document states the rules the server checks on inputs", () => {
  it("gives every refinement of a request's schema its rule in JSON Schema (a pattern, an enum, bounds)", () => {
    const unstated = requestRefinements()
      .filter(({ refinement }) => Option.isNone(SchemaAST.getJSONSchemaAnnotation(refinement)))
      .map(({ endpoint, refinement }) => `${endpoint}: ${refinement}`)
    expect(unstated).toEqual([])
  })

  it("writes patterns that every regular expression engine reads alike: \\s with what engines disagree on, no \\d, \\w or \\b", () => {
    // Python's \s takes U+001C to U+001F and U+0085 and JavaScript's U+FEFF: named beside it, every engine reads one
    // set. Python's \d and \w take every script's digits and letters.
    const engineDependent = /(?:^|[^\\])(?:\\\\)*\\(?:[SdDwWbB]|s(?!\\u001C-\\u001F\\u0085\\uFEFF))/
    const patterns = patternsIn(spec)
    expect(patterns.filter((pattern) => pattern.includes("\\s")).length).toBeGreaterThan(5)
    expect(patterns.filter((pattern) => engineDependent.test(pattern))).toEqual([])
  })

  it.each(samples)("accepts and refuses the same %s as the server", (component, schema, values) => {
    const decode = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown, never>)
    for (const value of values) {
      expect({ value, document: documentAccepts(component, value) }).toEqual({ value, document: Either.isRight(decode(value)) })
    }
  })
})

import { Body, Controller, Get, Headers, Param, Patch, Query, UseGuards } from "@nestjs/common"
import * as api from "../../common.mjs"
import { BearerGuard, CurrentUser } from "./auth.guard.js"
import { HealthService, OrganizationsService, TeamsService } from "./postline.service.js"

@Controller("health")
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get()
  check() {
    return this.health.check()
  }
}

@Controller("v1/organizations")
@UseGuards(BearerGuard)
export class OrganizationsController {
  constructor(private readonly organizations: OrganizationsService) {}

  @Get()
  list(@CurrentUser() user: api.User, @Query() query: api.QueryParams) {
    return this.organizations.list(user, query)
  }
}

@Controller("v1/teams")
@UseGuards(BearerGuard)
export class TeamsController {
  constructor(private readonly teams: TeamsService) {}

  @Get()
  list(@CurrentUser() user: api.User, @Query() query: api.QueryParams) {
    return this.teams.list(user, query)
  }

  @Patch(":teamId")
  update(
    @CurrentUser() user: api.User,
    @Param("teamId") teamId: string,
    @Headers("content-type") contentType: string | undefined,
    @Body() changes: unknown
  ) {
    if (!api.isJson(contentType)) throw api.notJson()
    if (!api.isUuid(teamId)) throw new api.HttpError(400, "BadRequest", "teamId must be a UUID")
    return this.teams.update(user, teamId, changes)
  }
}

import { Injectable, type OnApplicationBootstrap } from "@nestjs/common"
import * as api from "../../common.mjs"
import { PrismaService } from "./prisma.service.js"

@Injectable()
export class UsersService implements OnApplicationBootstrap {
  constructor(private readonly prisma: PrismaService) {}

  /** Cursors are signed with the installation's secret, read once. */
  async onApplicationBootstrap() {
    const [secret] = await this.prisma.$queryRawUnsafe<Array<{ value: string }>>(api.cursorSecretQuery)
    api.setCursorSecret(secret!.value)
  }

  authenticate(authorization: string | undefined): Promise<api.User> {
    return api.authenticate(this.prisma.db, authorization)
  }
}

@Injectable()
export class OrganizationsService {
  constructor(private readonly prisma: PrismaService) {}

  list(user: api.User, query: api.QueryParams): Promise<api.Page> {
    return api.listOrganizations(this.prisma.db, user, query)
  }
}

@Injectable()
export class TeamsService {
  constructor(private readonly prisma: PrismaService) {}

  list(user: api.User, query: api.QueryParams): Promise<api.Page> {
    return api.listTeams(this.prisma.db, user, query)
  }

  update(user: api.User, teamId: string, changes: unknown): Promise<api.Row> {
    return api.updateTeam(this.prisma.db, user, teamId, api.checkTeamChanges(changes))
  }
}

@Injectable()
export class HealthService {
  constructor(private readonly prisma: PrismaService) {}

  async check() {
    await this.prisma.$queryRawUnsafe(api.healthQuery)
    return api.healthBody
  }
}

import { Module } from "@nestjs/common"
import { BearerGuard } from "./auth.guard.js"
import { HealthController, OrganizationsController, TeamsController } from "./controllers.js"
import { HealthService, OrganizationsService, TeamsService, UsersService } from "./postline.service.js"
import { PrismaService } from "./prisma.service.js"

@Module({
  controllers: [HealthController, OrganizationsController, TeamsController],
  providers: [PrismaService, UsersService, OrganizationsService, TeamsService, HealthService, BearerGuard]
})
export class AppModule {}

import { type CanActivate, createParamDecorator, type ExecutionContext, Injectable } from "@nestjs/common"
import type { User } from "../../common.mjs"
import { UsersService } from "./postline.service.js"

export interface ApiRequest {
  readonly headers: Record<string, string | undefined>
  user?: User
}

/** Bearer tokens: the caller is looked up before the handler runs (a 401 otherwise). */
@Injectable()
export class BearerGuard implements CanActivate {
  constructor(private readonly users: UsersService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<ApiRequest>()
    request.user = await this.users.authenticate(request.headers.authorization)
    return true
  }
}

/** The caller that BearerGuard found. */
export const CurrentUser = createParamDecorator((_data: unknown, context: ExecutionContext): User =>
  context.switchToHttp().getRequest<ApiRequest>().user!
)

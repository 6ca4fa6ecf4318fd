import { Injectable, type OnModuleDestroy, type OnModuleInit } from "@nestjs/common"
import { PrismaPg } from "@prisma/adapter-pg"
import type { Db, Row } from "../../common.mjs"
import { PrismaClient } from "./generated/prisma/client.js"

/**
 * Prisma 7 without its Rust engine: the `prisma-client` generator's client over the `pg` driver adapter
 * (a pg.Pool of 10 connections, as the baseline's). Every statement is a raw one, so that it is the
 * baseline's text; a change runs in an interactive transaction (`$transaction(async (tx) => …)`), whose
 * BEGIN and COMMIT (ROLLBACK) are the adapter's, sent as the baseline sends them.
 */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleInit, OnModuleDestroy {
  constructor() {
    super({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL, max: 10 }) })
  }

  async onModuleInit() {
    await this.$connect()
  }

  async onModuleDestroy() {
    await this.$disconnect()
  }

  /** The database as ../../common.mjs uses it. */
  readonly db: Db = {
    query: (text, values) => this.$queryRawUnsafe<Row[]>(text, ...values),
    // Interactive transactions wait up to 2 s for a connection and run up to 5 s by default: under the
    // benchmark's 32 connections on a pool of 10, as long as a request may take (the load's timeout).
    transaction: (work) =>
      this.$transaction((tx) => work((text, values) => tx.$queryRawUnsafe<Row[]>(text, ...values)), {
        maxWait: 10_000,
        timeout: 10_000
      })
  }
}

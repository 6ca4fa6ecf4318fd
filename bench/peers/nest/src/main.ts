// Peer of the benchmark: NestJS (Express adapter) + Prisma 7 (driver adapter @prisma/adapter-pg, no Rust
// engine), the stack of Postiz, serving S1, S3 and S4 (bench/README.md). Built by bench/run.mjs
// (prisma generate, then tsc -p bench/peers/nest) into bench/peers/nest/dist.
//
// Env: PORT, HOST (default 127.0.0.1), DATABASE_URL.
import "reflect-metadata"
import { NestFactory } from "@nestjs/core"
import { AppModule } from "./app.module.js"
import { ErrorFilter } from "./error.filter.js"

const app = await NestFactory.create(AppModule, { logger: ["error", "warn"] })
app.useGlobalFilters(new ErrorFilter())
app.enableShutdownHooks()
const port = Number(process.env.PORT ?? 3003)
const host = process.env.HOST ?? "127.0.0.1"
await app.listen(port, host)
console.log(JSON.stringify({ message: `nest peer listening on http://${host}:${port}` }))

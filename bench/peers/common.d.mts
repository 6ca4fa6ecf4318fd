// Types of common.mjs, for the NestJS peer's TypeScript.
export type Row = Record<string, unknown>
export type Query = (text: string, values: ReadonlyArray<unknown>) => Promise<Row[]>
export interface Db {
  readonly query: Query
  readonly transaction: <A>(work: (query: Query) => Promise<A>) => Promise<A>
}
export interface User {
  readonly id: string
  readonly email: string
  readonly name: string
  readonly expired: boolean
}
/** A parsed query string: repeated keys are arrays. */
export type QueryParams = Record<string, unknown>
export interface Page {
  readonly data: Row[]
  readonly total: number
  readonly nextCursor: string | null
  readonly prevCursor: string | null
}

export declare class HttpError extends Error {
  constructor(status: number, tag: string, message: string)
  readonly status: number
  readonly tag: string
}
export declare const errorBody: (error: HttpError) => { message: string; _tag: string }
export declare const challenge: Record<string, string>
export declare const notJson: () => HttpError
export declare const invalidJson: () => HttpError
export declare const noRoute: (method: string, path: string) => HttpError
export declare const internalError: () => HttpError

export declare const cursorSecretQuery: string
export declare const healthQuery: string
export declare const healthBody: { status: string; database: string }
export declare const setCursorSecret: (value: string) => void

export declare const authenticate: (db: Db, header: string | undefined) => Promise<User>
export declare const isUuid: (s: unknown) => s is string
export declare const isJson: (contentType: string | undefined) => boolean
export declare const listOrganizations: (db: Db, user: User, query: QueryParams) => Promise<Page>
export declare const listTeams: (db: Db, user: User, query: QueryParams) => Promise<Page>
export declare const checkTeamChanges: (changes: unknown) => Record<string, unknown>
export declare const updateTeam: (db: Db, user: User, teamId: string, changes: Record<string, unknown>) => Promise<Row>

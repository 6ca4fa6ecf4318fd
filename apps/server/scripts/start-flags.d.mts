/** The Node.js flags of `pnpm start`, from the root package.json. */
export declare const startNodeFlags: () => Array<string>

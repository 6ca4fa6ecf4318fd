import { lazyModule } from "../LazyModule.js"

/**
 * sharp (libvips) loads on the first image sent to Bluesky, not at start (uploads are decoded by image jobs,
 * ImageJob.ts). It stays outside the bundle (scripts/build.mjs): Node loads it from node_modules, with its native code.
 */
export const SharpModule = lazyModule("sharp", () => import("sharp"), { default: "function" })

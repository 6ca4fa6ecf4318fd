import { lazyModule } from "../LazyModule.js"

/**
 * sharp (libvips) and the HEIC decoder load on the first image, not at start. Both stay outside the bundle
 * (scripts/build.mjs): Node loads them from node_modules, with their native and WebAssembly code.
 */
export const SharpModule = lazyModule("sharp", () => import("sharp"), { default: "function" })

export const HeicDecodeModule = lazyModule("heic-decode", () => import("heic-decode"), { default: "function" })

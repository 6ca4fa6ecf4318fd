import { lazyModule } from "../LazyModule.js"

/** sharp (libvips) and the HEIC decoder load on the first image, not at start. */
export const SharpModule = lazyModule("sharp", () => import("sharp"), { default: "function" })

export const HeicDecodeModule = lazyModule("heic-decode", () => import("heic-decode"), { default: "function" })

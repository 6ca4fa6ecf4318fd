declare module "heic-decode" {
  interface DecodedImage {
    readonly width: number
    readonly height: number
    /** RGBA, 4 bytes a pixel. */
    readonly data: Uint8ClampedArray
  }
  /** An image of the file, its size read from its header: its pixels are decoded only by `decode`. */
  interface UndecodedImage {
    readonly width: number
    readonly height: number
    readonly decode: () => Promise<DecodedImage>
  }
  interface Decode {
    (input: { readonly buffer: Uint8Array | ArrayBuffer }): Promise<DecodedImage>
    all: (input: { readonly buffer: Uint8Array | ArrayBuffer }) => Promise<ReadonlyArray<UndecodedImage> & { readonly dispose: () => void }>
  }
  const decode: Decode
  export default decode
}

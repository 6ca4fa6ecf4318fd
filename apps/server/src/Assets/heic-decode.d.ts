declare module "heic-decode" {
  interface DecodedImage {
    readonly width: number
    readonly height: number
    /** RGBA, 4 bytes a pixel. */
    readonly data: Uint8ClampedArray
  }
  const decode: (input: { readonly buffer: Uint8Array | ArrayBuffer }) => Promise<DecodedImage>
  export default decode
}

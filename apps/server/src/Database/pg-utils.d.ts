// pg's own parameter preparation (dates, JSON, arrays, buffers), as pg sends parameters.
declare module "pg/lib/utils.js" {
  const utils: { readonly prepareValue: (value: unknown) => unknown }
  export default utils
}

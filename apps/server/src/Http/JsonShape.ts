/**
 * Bounds on the shape of any JSON body, checked before its schema decodes it:
 * no request of this API comes near them, and within them a schema's decoding
 * (which lists every issue it finds) stays small in time and memory whatever
 * the body holds. The schemas set the exact limits of each field.
 */
export const jsonShapeLimits = {
  depth: 8,
  propertiesPerObject: 64,
  itemsPerArray: 100
} as const

export interface ShapeIssue {
  readonly path: ReadonlyArray<string>
  readonly message: string
}

/** The first place where `value` exceeds the limits, if any; walks without recursion. */
export const jsonShapeIssue = (value: unknown): ShapeIssue | undefined => {
  const pending: Array<{ readonly value: unknown; readonly path: ReadonlyArray<string> }> = [{ value, path: [] }]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { path } = next
    if (next.value === null || typeof next.value !== "object") continue
    if (path.length >= jsonShapeLimits.depth) {
      return { path, message: `is nested too deeply: bodies nest at most ${jsonShapeLimits.depth} levels` }
    }
    if (Array.isArray(next.value)) {
      if (next.value.length > jsonShapeLimits.itemsPerArray) {
        return { path, message: `has ${next.value.length} items; at most ${jsonShapeLimits.itemsPerArray} are allowed` }
      }
      next.value.forEach((item, index) => pending.push({ value: item, path: [...path, String(index)] }))
    } else {
      const keys = Object.keys(next.value)
      if (keys.length > jsonShapeLimits.propertiesPerObject) {
        return { path, message: `has ${keys.length} properties; at most ${jsonShapeLimits.propertiesPerObject} are allowed` }
      }
      for (const key of keys) pending.push({ value: (next.value as Record<string, unknown>)[key], path: [...path, key] })
    }
  }
  return undefined
}

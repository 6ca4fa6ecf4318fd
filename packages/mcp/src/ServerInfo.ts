/** How Postline's MCP server introduces itself at `initialize`: the name agents show, and this package's version. */
export const serverInfo = { name: "postline", version: "0.1.0" } as const

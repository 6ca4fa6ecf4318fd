/**
 * Content types of request bodies, each defined here once. A type matches on
 * its media type alone: parameters (`; charset=utf-8`) may follow, and case
 * does not matter.
 */

/** A form (`application/x-www-form-urlencoded`), as HTML forms and OAuth clients send it. */
export const formContentType = /^application\/x-www-form-urlencoded\s*(?:;|$)/i

/** JSON: exactly the type the platform's body reader parses as JSON, since `+json` types would be read as bytes. */
export const jsonContentType = /^application\/json\s*(?:;|$)/i

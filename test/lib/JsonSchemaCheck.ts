/**
 * A JSON Schema check for the keywords schema/murmur.schema.json uses, so the tests can say
 * whether the schema accepts a manifest without a validator dependency. A keyword it does not
 * know is an error, never skipped: if the generated schema starts using one, the tests fail
 * until this learns it (or a real validator replaces it).
 */
type Node = { readonly [key: string]: unknown }

const ANNOTATIONS = new Set(["$schema", "$comment", "description", "default", "title"])
const KNOWN = new Set(["type", "enum", "properties", "required", "additionalProperties", "items", "anyOf", "not", "minimum", "maximum", "pattern"])

const typeMatches = (type: string, value: unknown): boolean => {
  switch (type) {
    case "object":
      return value !== null && typeof value === "object" && !Array.isArray(value)
    case "array":
      return Array.isArray(value)
    case "integer":
      return typeof value === "number" && Number.isInteger(value)
    case "number":
      return typeof value === "number"
    case "string":
    case "boolean":
      return typeof value === type
    case "null":
      return value === null
    default:
      throw new Error(`unknown type '${type}'`)
  }
}

/** Every problem found, each as `path: what` (empty when `value` is accepted). */
export const schemaProblems = (schema: Node, value: unknown, path = "$"): ReadonlyArray<string> => {
  for (const key of Object.keys(schema)) {
    if (!ANNOTATIONS.has(key) && !KNOWN.has(key)) throw new Error(`${path}: schema keyword '${key}' is not checked by JsonSchemaCheck`)
  }
  const problems: Array<string> = []
  const type = schema["type"] as string | undefined
  if (type !== undefined && !typeMatches(type, value)) return [`${path}: expected ${type}, got ${JSON.stringify(value)}`]
  const enumeration = schema["enum"] as ReadonlyArray<unknown> | undefined
  if (enumeration !== undefined && !enumeration.includes(value)) problems.push(`${path}: ${JSON.stringify(value)} is not one of ${enumeration.join(", ")}`)
  if (typeof value === "number") {
    if (typeof schema["minimum"] === "number" && value < schema["minimum"]) problems.push(`${path}: ${value} < ${schema["minimum"]}`)
    if (typeof schema["maximum"] === "number" && value > schema["maximum"]) problems.push(`${path}: ${value} > ${schema["maximum"]}`)
  }
  if (typeof value === "string" && typeof schema["pattern"] === "string" && !new RegExp(schema["pattern"]).test(value)) {
    problems.push(`${path}: '${value}' does not match ${schema["pattern"]}`)
  }
  if (schema["not"] !== undefined && schemaProblems(schema["not"] as Node, value, path).length === 0) problems.push(`${path}: not allowed`)
  const anyOf = schema["anyOf"] as ReadonlyArray<Node> | undefined
  if (anyOf !== undefined && anyOf.every((variant) => schemaProblems(variant, value, path).length > 0)) {
    problems.push(`${path}: matches none of ${anyOf.length} alternatives`)
  }
  if (Array.isArray(value) && schema["items"] !== undefined) {
    value.forEach((item, index) => problems.push(...schemaProblems(schema["items"] as Node, item, `${path}[${index}]`)))
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const record = value as Readonly<Record<string, unknown>>
    const properties = (schema["properties"] as Readonly<Record<string, Node>> | undefined) ?? {}
    for (const key of (schema["required"] as ReadonlyArray<string> | undefined) ?? []) {
      if (!(key in record)) problems.push(`${path}: missing '${key}'`)
    }
    for (const [key, item] of Object.entries(record)) {
      const itemPath = `${path}.${key}`
      const property = properties[key]
      if (property !== undefined) problems.push(...schemaProblems(property, item, itemPath))
      else if (schema["additionalProperties"] === false) problems.push(`${itemPath}: unknown key`)
      else if (typeof schema["additionalProperties"] === "object") problems.push(...schemaProblems(schema["additionalProperties"] as Node, item, itemPath))
    }
  }
  return problems
}

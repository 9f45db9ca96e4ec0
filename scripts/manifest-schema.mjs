// `node scripts/manifest-schema.mjs` (after `npm run build`): writes schema/murmur.schema.json
// from the written-form Effect Schema of murmur.yaml (src/project/manifest/ManifestDocument.ts)
// and regenerates the key table of docs/manifest.md. test/cli/ManifestSchema.test.ts fails while
// either checked-in file differs from what this would write.
import { readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const load = (path) => import(pathToFileURL(join(root, "dist", path)).href)
const { manifestSchemaText, SCHEMA_PATH } = await load("project/manifest/ManifestSchema.js")
const { withKeyTable } = await load("project/manifest/ManifestReference.js")

writeFileSync(join(root, SCHEMA_PATH), manifestSchemaText())
const docPath = join(root, "docs", "manifest.md")
const doc = withKeyTable(readFileSync(docPath, "utf8"))
if (doc === undefined) {
  process.stderr.write("error[E-SCHEMA-001]: docs/manifest.md lacks the manifest-keys begin/end markers; add them where the table goes\n")
  process.exit(1)
}
writeFileSync(docPath, doc)
process.stdout.write(`wrote ${SCHEMA_PATH} and the key table of docs/manifest.md\n`)

#!/usr/bin/env node
/**
 * Lists every function in src/ with more than `--max` (default 100) lines of its own: the lines
 * from its first token to its last, less the lines of the functions nested in it (each of those
 * is measured on its own). `Effect.gen(function*() { … })` inside an arrow thus counts against
 * the generator, not the arrow. Reads the sources with the TypeScript compiler API.
 *
 *   node scripts/function-lengths.mjs [--max 100] [--json] [dir]
 *
 * Files that open with `// Code generated … DO NOT EDIT.` (src/grpc/generated/) are not checked.
 *
 * Prints `path:line name (N lines)` per function over the limit (or a JSON array with --json)
 * and exits 1 when there is any. test/FunctionLengths.test.ts runs it.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

const args = process.argv.slice(2)
const flag = (name) => {
  const at = args.indexOf(name)
  if (at === -1) return undefined
  const [, value] = args.splice(at, 2)
  return value
}
const json = args.includes("--json")
if (json) args.splice(args.indexOf("--json"), 1)
const max = Number(flag("--max") ?? 100)
const dir = args[0] ?? join(root, "src")

const isFunctionLike = (node) =>
  ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node) || ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node)

/** What a reader calls the function: its own name, or the name it is bound to. */
const nameOf = (node, source) => {
  if (node.name !== undefined) return node.name.getText(source)
  if (ts.isConstructorDeclaration(node)) return "constructor"
  let parent = node.parent
  // through the calls and wrappers it is an argument of: Effect.fn("X")(function*() {}), Effect.gen(…)
  while (parent !== undefined && (ts.isCallExpression(parent) || ts.isParenthesizedExpression(parent) || ts.isAsExpression(parent))) {
    if (ts.isCallExpression(parent)) {
      const callee = parent.expression
      const label = ts.isCallExpression(callee) ? callee.arguments[0] : undefined
      if (label !== undefined && ts.isStringLiteral(label)) return label.text
      if (ts.isPropertyAccessExpression(callee) && callee.name.text === "gen") return callee.getText(source)
    }
    parent = parent.parent
  }
  if (parent !== undefined && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))) {
    return parent.name.getText(source)
  }
  return "(anonymous)"
}

const lineOf = (source, pos) => source.getLineAndCharacterOfPosition(pos).line

/** Every function-like node with its own line count, the enclosing function's name before its own. */
const measure = (source, file) => {
  const found = []
  const visit = (node, outer) => {
    if (!isFunctionLike(node)) return ts.forEachChild(node, (child) => visit(child, outer))
    const span = lineOf(source, node.getEnd()) - lineOf(source, node.getStart(source)) + 1
    const name = outer === undefined ? nameOf(node, source) : `${outer.name} > ${nameOf(node, source)}`
    const entry = { file, line: lineOf(source, node.getStart(source)) + 1, name, span, lines: span }
    if (outer !== undefined) outer.lines -= span
    found.push(entry)
    ts.forEachChild(node, (child) => visit(child, entry))
  }
  visit(source, undefined)
  return found
}

const files = readdirSync(dir, { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts"))
  .map((entry) => join(entry.parentPath, entry.name))
  .sort()

// Generated code (src/grpc/generated/, `npm run gen:grpc`) is not written by hand: a file that
// opens with the usual `// Code generated … DO NOT EDIT.` line is left out.
const generated = /^\/\/ Code generated .* DO NOT EDIT\./

const long = files.flatMap((path) => {
  const text = readFileSync(path, "utf8")
  if (generated.test(text)) return []
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true)
  return measure(source, relative(root, path)).filter((fn) => fn.lines > max)
}).map(({ file, line, lines, name }) => ({ file, line, name, lines }))

if (json) process.stdout.write(`${JSON.stringify(long, null, 2)}\n`)
else for (const fn of long) process.stdout.write(`${fn.file}:${fn.line} ${fn.name} (${fn.lines} lines)\n`)
process.exitCode = long.length === 0 ? 0 : 1

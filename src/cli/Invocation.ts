/**
 * How the person at the terminal runs this command line, for the commands we print them to run
 * next: `capsule-runtime` where the package is installed (its bin is on PATH, or `npx` finds it),
 * else `node <path to dist/main.js>` as they ran it (a clone, where no `capsule-runtime` exists).
 */
import { isAbsolute, relative, sep } from "node:path"

export const invocation = (script: string | undefined = process.argv[1], cwd: string = process.cwd()): string => {
  if (script === undefined || script.split(sep).includes("node_modules") || !/[\\/]dist[\\/]main\.js$/.test(script)) return "capsule-runtime"
  const shown = relative(cwd, script)
  return `node ${shown.startsWith("..") || isAbsolute(shown) ? script : shown}`
}

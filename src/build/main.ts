/**
 * `node dist/build/main.js`: builds the shipped guests (./ShippedGuests.ts) after `tsc`, as
 * the last step of `npm run build`. Unchanged guests are skipped by their stamps. The
 * componentize-js drivers (./DriverBuild.ts) come last: they take ~20 s each when rebuilt.
 */
import { relative } from "node:path"
import { buildDriver, shippedDrivers } from "./DriverBuild.js"
import { repoRoot } from "./GuestWit.js"
import { buildGuest, quickJsGuests } from "./ShippedGuests.js"

for (const guest of quickJsGuests) {
  const built = await buildGuest(guest)
  if (built.rebuilt) process.stdout.write(`built ${guest.dir} (${built.ms} ms)\n`)
}

for (const driver of shippedDrivers) {
  const built = await buildDriver(driver)
  if (built.rebuilt) process.stdout.write(`built ${relative(repoRoot, built.file)} (${built.ms} ms, ${(built.bytes / 1_048_576).toFixed(1)} MiB)\n`)
}

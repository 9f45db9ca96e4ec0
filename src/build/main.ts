/**
 * `node dist/build/main.js`: builds the shipped guests (./ShippedGuests.ts) after `tsc`, as
 * the last step of `npm run build`. Unchanged guests are skipped by their stamps.
 */
import { buildGuest, quickJsGuests } from "./ShippedGuests.js"

for (const guest of quickJsGuests) {
  const built = await buildGuest(guest)
  if (built.rebuilt) process.stdout.write(`built ${guest.dir} (${built.ms} ms)\n`)
}

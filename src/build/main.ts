/**
 * `node dist/build/main.js`: builds the shipped guests (./ShippedGuests.ts) after `tsc`, as
 * the last step of `npm run build`. Unchanged guests are skipped by their stamps.
 */
import { buildGuest, shippedGuests } from "./ShippedGuests.js"

for (const guest of shippedGuests) {
  const built = await buildGuest(guest)
  if (built.rebuilt) process.stdout.write(`built ${guest.dir} (${built.ms} ms, ${(built.bytes / 1_048_576).toFixed(1)} MiB)\n`)
}

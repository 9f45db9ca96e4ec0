/**
 * `node dist/build/main.js`: builds the shipped guests (./ShippedGuests.ts) after `tsc`, as
 * the last step of `npm run build`. Unchanged guests are skipped by their stamps; a guest about
 * to be rebuilt is announced first, since StarlingMonkey takes ~20 s.
 */
import { isUpToDate } from "./GuestBuild.js"
import { buildGuest, shippedGuestDir, shippedGuests } from "./ShippedGuests.js"

for (const guest of shippedGuests) {
  if (isUpToDate(shippedGuestDir(guest))) continue
  process.stdout.write(`building ${guest.dir} (${guest.builder.label})…\n`)
  const built = await buildGuest(guest)
  process.stdout.write(`built ${guest.dir} (${built.ms} ms, ${(built.bytes / 1_048_576).toFixed(1)} MiB)\n`)
}

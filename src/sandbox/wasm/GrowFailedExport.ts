/**
 * The export name of GrowProbe's global (pages of the last growth the memory cap refused). Its
 * own module so a guest worker can read it without loading the instrumenter.
 */
export const GROW_FAILED_EXPORT = "__murmur_grow_failed"

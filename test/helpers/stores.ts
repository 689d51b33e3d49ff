/** Which stores this run tests: ERRAND_STORES (comma-separated), or every one when unset. */
export function selectedStoreNames(): string[] | null {
  const wanted = process.env.ERRAND_STORES?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return wanted && wanted.length > 0 ? wanted : null;
}

/** Whether this run includes `name` (ERRAND_STORES unset, or naming it). */
export function storeSelected(name: string): boolean {
  const wanted = selectedStoreNames();
  return wanted === null || wanted.includes(name);
}

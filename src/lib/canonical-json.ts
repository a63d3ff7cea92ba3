/** JSON with its object keys sorted, so two equal values compare (and hash) equal whatever their key order. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as object).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );
}

/** JSON with its object keys sorted, so two equal values compare (and hash) equal whatever their key order. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, part) =>
    part && typeof part === "object" && !Array.isArray(part)
      ? Object.fromEntries(
          Object.entries(part as object).sort(([left], [right]) => left.localeCompare(right)),
        )
      : part,
  );
}

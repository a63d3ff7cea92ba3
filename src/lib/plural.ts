// One way to count things in a sentence, so no page says "1 runs" or "1 action now need".

/** "1 run", "3 runs", "0 runs"; irregular words give their plural ("1 person", "2 people"). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;
}

/** The verb that agrees with a count: "1 action needs", "2 actions need". */
export function agree(n: number, one: string, many: string): string {
  return n === 1 ? one : many;
}

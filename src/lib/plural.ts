// One way to count things in a sentence, so no page says "1 runs" or "1 action now need".

const numberFormat = new Intl.NumberFormat("en-US");

/**
 * `n` as toLocaleString("en-US") writes it. Below 1,000 a whole number is its digits, and
 * String() costs a fraction of the locale's formatter: an agent's page lists dozens of counts.
 */
const count = (n: number) =>
  Number.isInteger(n) && n >= 0 && n < 1000 && !Object.is(n, -0) ? String(n) : numberFormat.format(n);

/** "1 run", "3 runs", "0 runs"; irregular words give their plural ("1 person", "2 people"). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/** The verb that agrees with a count: "1 action needs", "2 actions need". */
export function agree(n: number, one: string, many: string): string {
  return n === 1 ? one : many;
}

// One way to count things in a sentence, so no page says "1 runs" or "1 action now need".

const numberFormat = new Intl.NumberFormat("en-US");

/**
 * `value` as toLocaleString("en-US") writes it. Below 1,000 a whole number is its digits, and
 * String() costs a fraction of the locale's formatter: an agent's page lists dozens of counts.
 */
const formatCount = (value: number) =>
  Number.isInteger(value) && value >= 0 && value < 1000 && !Object.is(value, -0)
    ? String(value)
    : numberFormat.format(value);

/** "1 run", "3 runs", "0 runs"; irregular words give their plural ("1 person", "2 people"). */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${formatCount(count)} ${count === 1 ? one : many}`;
}

/** The verb that agrees with a count: "1 action needs", "2 actions need". */
export function agree(count: number, one: string, many: string): string {
  return count === 1 ? one : many;
}

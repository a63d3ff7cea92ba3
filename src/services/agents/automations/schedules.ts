// What a schedule's cron expression and time zone mean: validated when saved (so a bad
// one is a 400 naming the problem, never a failure at fire time) and stepped to the
// next slot. croner parses and steps, time zones and DST included; nothing here
// interprets cron fields by hand.
import { Cron, CronPattern } from "croner";
import { ValidationError } from "../../../lib/errors.ts";

/** 5 fields (minute hour day month weekday), or 6 with a leading seconds field. */
const MODE = "5-or-6-parts" as const;
const MIN_INTERVAL_MS = 60_000;

/** The IANA name as the runtime spells it (`europe/paris` → `Europe/Paris`), or null if it is none. */
export function canonicalZone(zone: string): string | null {
  // Intl accepts offsets (`+01:00`) too; a schedule follows a place, whose offset changes with DST.
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(zone)) return null;
  try {
    return new Intl.DateTimeFormat("en", { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

const cronOf = (cron: string, zone: string) => new Cron(cron, { timezone: zone, mode: MODE, paused: true });

/** The first slot strictly after `from`, or null if the expression never fires again. */
export function nextSlot(cron: string, zone: string, from: Date): Date | null {
  return cronOf(cron, zone).nextRun(from);
}

export function nextSlots(cron: string, zone: string, count: number, from = new Date()): Date[] {
  return cronOf(cron, zone).nextRuns(count, from);
}

/**
 * Checks a schedule as typed and returns it canonical, with its first slot. Every
 * problem is a ValidationError naming its param: a time zone that is not one, a cron
 * expression croner cannot read, one that fires more often than once a minute (any
 * seconds field with more than one value), or one that never fires.
 */
export function checkSchedule(cron: string, timeZone: string, now = new Date()) {
  const zone = canonicalZone(timeZone);
  if (!zone)
    throw new ValidationError([
      {
        field: "time_zone",
        message: `“${timeZone}” is not a time zone: use an IANA name such as Europe/Paris or UTC`,
      },
    ]);
  const expr = cron.trim().replace(/\s+/g, " ");
  let pattern: CronPattern;
  try {
    pattern = new CronPattern(expr, zone, { mode: MODE });
  } catch (err) {
    const why = (err as Error).message.replace(/^CronPattern: /, "");
    throw new ValidationError([{ field: "cron", message: `not a cron expression: ${why}` }]);
  }
  const tooOften = {
    field: "cron",
    message:
      "fires more than once a minute: the minimum interval is one minute (use 5 fields: minute hour day month weekday)",
  };
  if (expr.split(" ").length === 6 && pattern.second.filter(Boolean).length > 1)
    throw new ValidationError([tooOften]);
  const [first, second] = nextSlots(expr, zone, 2, now);
  if (!first) throw new ValidationError([{ field: "cron", message: "never fires (no such date)" }]);
  if (second && second.getTime() - first.getTime() < MIN_INTERVAL_MS) throw new ValidationError([tooOften]);
  return { cron: expr, timeZone: zone, nextFireAt: first };
}

/** `Mon 25 Nov 2026 09:00 Europe/Paris`: a slot as a person in its zone reads it. */
export function slotLabel(date: Date, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-GB", {
      timeZone: zone,
      weekday: "short",
      day: "numeric",
      month: "short",
      year: "numeric",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.weekday} ${parts.day} ${parts.month} ${parts.year} ${parts.hour}:${parts.minute} ${zone}`;
}

/** The run's task: the schedule's, and which slot woke it (a late catch-up still names the slot it stands for). */
export function scheduledTask(task: string, slot: Date, zone: string): string {
  return `${task}\n\nScheduled run for ${slotLabel(slot, zone)}.`;
}

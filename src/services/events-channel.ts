// The channel every outbox write NOTIFYs on commit and the relay LISTENs to. A module of
// its own, so the relay's thread can name it without loading the Prisma client.
export const EVENTS_CHANNEL = "cadre_events";

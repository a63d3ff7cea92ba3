-- The outbox's wake-up (src/jobs/event-relay.ts): every event NOTIFYs `cadre_events` with its
-- id when its transaction commits, whichever statement inserted it. Writing an event one at a
-- time was two statements (the insert, then the NOTIFY) and a statement costs its round trip;
-- a statement inserting many no longer has to remember to notify for each.
CREATE FUNCTION cadre_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cadre_events', NEW.id);
  RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
  FOR EACH ROW EXECUTE FUNCTION cadre_events_notify();

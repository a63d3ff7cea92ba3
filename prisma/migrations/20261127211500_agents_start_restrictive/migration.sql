-- New agents now start able to read, comment and confirm reads only (agent_config
-- `capabilities` defaults to that when absent). Agents made before kept every content
-- action while their config said nothing: they are given that list explicitly, so they
-- keep doing what they did.
UPDATE "users"
SET "agent_config" = jsonb_set(
  coalesce("agent_config", '{}'::jsonb),
  '{capabilities}',
  '["create_note", "update_note", "pin_note", "unpin_note", "confirm_read", "add_comment", "create_decision", "add_option", "vote", "create_commitment", "join_commitment", "subscribe", "unsubscribe"]'::jsonb
)
WHERE "kind" = 'subagent' AND NOT (coalesce("agent_config", '{}'::jsonb) ? 'capabilities');

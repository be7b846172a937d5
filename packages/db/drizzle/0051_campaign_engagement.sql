-- Issue 45: a campaign's engagement (recipients who replied, who opted out of its sender since it
-- started) was read at every count from the replies and opt-outs since its start, each matched to
-- the campaign's messages: ~150 ms a campaign at 10 M messages, and the lists count ten at once.
-- Now each reply and each opt-out writes its row here as it is stored (the triggers below), one
-- per campaign and recipient, and the counts read this table's key. A recipient is named by the
-- campaign's first message to them, not by their phone: no personal data is kept here, and an
-- erasure leaves the count as it was.
CREATE TABLE "campaign_engagement" (
	"campaign_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"message_id" uuid NOT NULL,
	"at" timestamp with time zone NOT NULL,
	CONSTRAINT "campaign_engagement_campaign_id_kind_message_id_pk" PRIMARY KEY("campaign_id","kind","message_id")
);
--> statement-breakpoint
CREATE INDEX "campaigns_sender_id_started_at_idx" ON "campaigns" USING btree ("sender_id","started_at");--> statement-breakpoint
-- A reply routed to a key engages the key's campaigns started by then that had reached its phone,
-- each with its first message to them. The messages are found by the phone's index from the
-- oldest such start on (runtime partition pruning), never by a campaign's.
CREATE FUNCTION dispatch_campaign_replied() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  since timestamptz;
BEGIN
  SELECT min(c.started_at) INTO since FROM campaigns c
  WHERE c.api_key_id = NEW.api_key_id AND c.started_at <= NEW.received_at;
  IF since IS NULL THEN RETURN NULL; END IF;
  INSERT INTO campaign_engagement (campaign_id, kind, message_id, at)
  SELECT DISTINCT ON (c.id) c.id, 'replied', m.id, NEW.received_at
  FROM messages m JOIN campaigns c ON c.id = m.batch_id AND c.api_key_id = m.api_key_id
  WHERE m.phone = NEW.phone AND m.api_key_id = NEW.api_key_id AND m.batch_id IS NOT NULL
    AND m.accepted_at >= since - interval '1 minute'
    AND c.started_at <= NEW.received_at AND m.accepted_at >= c.started_at - interval '1 minute'
  ORDER BY c.id, m.id
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER inbound_messages_campaign_replied AFTER INSERT ON inbound_messages FOR EACH ROW
  WHEN (NEW.api_key_id IS NOT NULL AND NEW.phone IS NOT NULL) EXECUTE FUNCTION dispatch_campaign_replied();
--> statement-breakpoint
-- A recipient's own opt-out (a keyword, a preference, a block: no key's entry) of a sender engages
-- every campaign of that sender started by then that had reached them, found the same way.
CREATE FUNCTION dispatch_campaign_opted_out() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  since timestamptz;
BEGIN
  SELECT min(c.started_at) INTO since FROM campaigns c
  WHERE c.sender_id = NEW.sender_id AND c.started_at <= NEW.created_at;
  IF since IS NULL THEN RETURN NULL; END IF;
  INSERT INTO campaign_engagement (campaign_id, kind, message_id, at)
  SELECT DISTINCT ON (c.id) c.id, 'opted_out', m.id, NEW.created_at
  FROM messages m JOIN campaigns c ON c.id = m.batch_id AND c.api_key_id = m.api_key_id
  WHERE m.phone = NEW.recipient AND m.batch_id IS NOT NULL
    AND m.accepted_at >= since - interval '1 minute'
    AND c.sender_id = NEW.sender_id AND c.started_at <= NEW.created_at
    AND m.accepted_at >= c.started_at - interval '1 minute'
  ORDER BY c.id, m.id
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER suppressions_campaign_opted_out AFTER INSERT ON suppressions FOR EACH ROW
  WHEN (NEW.api_key_id IS NULL) EXECUTE FUNCTION dispatch_campaign_opted_out();
--> statement-breakpoint
-- One campaign's engagement counted again from every reply and opt-out since its start, adding
-- what the triggers did not write: a reply stored before its campaign message's record (a Postgres
-- outage's catch-up). Run once when the campaign completes, and here for every campaign there is.
-- Read from the campaign's messages (their key and batch index, the partitions since its start),
-- hashed against the key's replies and the sender's opt-outs since then, never a probe per message
-- or per reply (nested loops off: the planner, misled by a campaign's messages just given their
-- batch, chose a scan of the sender's opt-outs for each message, minutes at 50,000).
CREATE FUNCTION dispatch_campaign_engagement_recount(campaign uuid) RETURNS void LANGUAGE plpgsql
SET enable_nestloop = off AS $$
DECLARE
  c campaigns%ROWTYPE;
BEGIN
  SELECT * INTO c FROM campaigns WHERE id = campaign;
  IF c.started_at IS NULL THEN RETURN; END IF;
  INSERT INTO campaign_engagement (campaign_id, kind, message_id, at)
  SELECT DISTINCT ON (m.phone) c.id, 'replied', m.id, i.received_at
  FROM messages m
  JOIN inbound_messages i ON i.phone = m.phone AND i.api_key_id = c.api_key_id AND i.received_at >= c.started_at
  WHERE m.api_key_id = c.api_key_id AND m.batch_id = c.id AND m.accepted_at >= c.started_at - interval '1 minute'
  ORDER BY m.phone, m.id, i.received_at
  ON CONFLICT DO NOTHING;
  INSERT INTO campaign_engagement (campaign_id, kind, message_id, at)
  SELECT DISTINCT ON (m.phone) c.id, 'opted_out', m.id, s.created_at
  FROM messages m
  JOIN suppressions s ON s.recipient = m.phone AND s.sender_id = c.sender_id AND s.owner = ''
    AND s.created_at >= c.started_at
  WHERE m.api_key_id = c.api_key_id AND m.batch_id = c.id AND m.accepted_at >= c.started_at - interval '1 minute'
  ORDER BY m.phone, m.id, s.created_at
  ON CONFLICT DO NOTHING;
END $$;
--> statement-breakpoint
SELECT dispatch_campaign_engagement_recount(id) FROM campaigns WHERE started_at IS NOT NULL;

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
-- The campaigns of a key (or a sender) started by `at` with a message to `phone`, each with its
-- first message to them: what a reply or an opt-out at `at` engages. The messages are found by the
-- phone's index from the oldest such start on (runtime partition pruning), never by a campaign's.
CREATE FUNCTION dispatch_campaign_engaged(engaged text, recipient text, key_id uuid, sender text, engaged_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  since timestamptz;
BEGIN
  SELECT min(c.started_at) INTO since FROM campaigns c
  WHERE c.started_at <= engaged_at AND (c.api_key_id = key_id OR c.sender_id = sender);
  IF since IS NULL THEN RETURN; END IF;
  INSERT INTO campaign_engagement (campaign_id, kind, message_id, at)
  SELECT DISTINCT ON (c.id) c.id, engaged, m.id, engaged_at
  FROM messages m JOIN campaigns c ON c.id = m.batch_id AND c.api_key_id = m.api_key_id
  WHERE m.phone = recipient AND m.batch_id IS NOT NULL
    AND m.accepted_at >= since - interval '1 minute'
    AND (m.api_key_id = key_id OR c.sender_id = sender)
    AND c.started_at <= engaged_at AND m.accepted_at >= c.started_at - interval '1 minute'
  ORDER BY c.id, m.id
  ON CONFLICT DO NOTHING;
END $$;
--> statement-breakpoint
-- A reply routed to a key engages that key's campaigns that reached its sender.
CREATE FUNCTION dispatch_campaign_replied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM dispatch_campaign_engaged('replied', NEW.phone, NEW.api_key_id, NULL, NEW.received_at);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER inbound_messages_campaign_replied AFTER INSERT ON inbound_messages FOR EACH ROW
  WHEN (NEW.api_key_id IS NOT NULL AND NEW.phone IS NOT NULL) EXECUTE FUNCTION dispatch_campaign_replied();
--> statement-breakpoint
-- A recipient's own opt-out (a keyword, a preference, a block: no key's entry) from a sender
-- engages every campaign of that sender that reached them.
CREATE FUNCTION dispatch_campaign_opted_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM dispatch_campaign_engaged('opted_out', NEW.recipient, NULL, NEW.sender_id, NEW.created_at);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER suppressions_campaign_opted_out AFTER INSERT ON suppressions FOR EACH ROW
  WHEN (NEW.api_key_id IS NULL) EXECUTE FUNCTION dispatch_campaign_opted_out();
--> statement-breakpoint
-- One campaign's engagement counted again from every reply and opt-out since its start, adding
-- what the triggers did not write: a reply stored before its campaign message's record (a Postgres
-- outage's catch-up). Run once when the campaign completes, and here for every campaign there is.
CREATE FUNCTION dispatch_campaign_engagement_recount(campaign uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO campaign_engagement (campaign_id, kind, message_id, at)
  SELECT DISTINCT ON (m.phone) c.id, 'replied', m.id, i.received_at
  FROM campaigns c
  JOIN inbound_messages i ON i.api_key_id = c.api_key_id AND i.received_at >= c.started_at
  JOIN messages m ON m.phone = i.phone AND m.batch_id = c.id AND m.api_key_id = c.api_key_id
    AND m.accepted_at >= c.started_at - interval '1 minute'
  WHERE c.id = campaign
  ORDER BY m.phone, m.id, i.received_at
  ON CONFLICT DO NOTHING;
  INSERT INTO campaign_engagement (campaign_id, kind, message_id, at)
  SELECT DISTINCT ON (m.phone) c.id, 'opted_out', m.id, s.created_at
  FROM campaigns c
  JOIN suppressions s ON s.sender_id = c.sender_id AND s.owner = '' AND s.created_at >= c.started_at
  JOIN messages m ON m.phone = s.recipient AND m.batch_id = c.id AND m.api_key_id = c.api_key_id
    AND m.accepted_at >= c.started_at - interval '1 minute'
  WHERE c.id = campaign
  ORDER BY m.phone, m.id, s.created_at
  ON CONFLICT DO NOTHING;
END $$;
--> statement-breakpoint
SELECT dispatch_campaign_engagement_recount(id) FROM campaigns WHERE started_at IS NOT NULL;

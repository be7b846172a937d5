-- A revoked key's endpoints get nothing more (issue 41): an event is written only for a key that has
-- an endpoint and is not revoked. The function is otherwise 0025's. Checked here, where every event
-- (message statuses, replies, templates, senders, opt-outs) is made, so no path can forget it; the
-- relay and the delivering worker look at the key's status too, for events written before.
CREATE OR REPLACE FUNCTION dispatch_emit_webhook_event(p_api_key_id uuid, p_type text, p_message_id uuid, p_data jsonb, p_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	v_now timestamptz := now();
	v_id text;
	v_sequence integer;
	v_since timestamptz := '-infinity';
BEGIN
	IF NOT EXISTS (
		SELECT 1 FROM webhook_endpoints e JOIN api_keys k ON k.id = e.api_key_id
		WHERE e.api_key_id = p_api_key_id AND k.status <> 'revoked'
	) THEN
		RETURN;
	END IF;
	v_id := 'msg_' || lpad(to_hex(floor(extract(epoch FROM v_now) * 1000)::bigint), 12, '0') || '7'
		|| substr(replace(gen_random_uuid()::text, '-', ''), 14);
	-- A UUIDv7 id (messages and replies since 0023/0024) carries the time the message was accepted or
	-- received, and none of its events is older: the previous ones are looked for from a day before
	-- (the app's and the platform's clocks against the database's), in the partitions from then on,
	-- not in every one.
	IF substr(p_message_id::text, 15, 1) = '7' THEN
		v_since := to_timestamp(('x' || lpad(replace(substr(p_message_id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint / 1000.0)
			- interval '1 day';
	END IF;
	-- The message's row is locked by the change being reported, so its events number one at a time.
	SELECT coalesce(max(sequence), 0) + 1 INTO v_sequence FROM webhook_events
	WHERE message_id = p_message_id AND created_at >= v_since;
	INSERT INTO webhook_events (id, api_key_id, type, message_id, sequence, payload, created_at)
	VALUES (v_id, p_api_key_id, p_type, p_message_id, v_sequence, jsonb_build_object(
		'type', p_type,
		'timestamp', to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
		'data', p_data || jsonb_build_object('sequence', v_sequence)), v_now);
	INSERT INTO outbox (topic, payload) VALUES ('webhook', jsonb_build_object('eventId', v_id));
	PERFORM pg_notify('dispatch_outbox', '');
END $$;

-- Issue 46: room on each page of `messages` for the updates a message gets after its insert. The
-- worker inserts a row `sent`, packed full (fillfactor 100); the status webhook then records its
-- pricing (the `sent` echo), `delivered` and often `read`. The pricing update touches no indexed
-- column, so with room on its page it is a HOT update: no entry in any of the table's 11 indexes,
-- and no second page. Status changes still write every index (`status` and `updated_at` are
-- indexed, schema/messages.ts says why) but keep the new version on the same page. Measured in
-- bench:wal (docs/operations.md, Writes per message).
--
-- Postgres keeps no storage parameters on a partitioned table: each partition carries its own.
-- Partitions made from now on take it from partitions.ts (PARTITION_STORAGE); here those already
-- there. Only pages filled from now on keep the room; nothing is rewritten, and the lock taken
-- (SHARE UPDATE EXCLUSIVE) lets reads and writes go on.
DO $$
DECLARE
	leaf regclass;
BEGIN
	FOR leaf IN SELECT relid FROM pg_partition_tree('messages') WHERE isleaf LOOP
		EXECUTE format('ALTER TABLE %s SET (fillfactor = 90)', leaf);
	END LOOP;
END $$;

-- Issue 43: an audience's rows no longer check their campaign through a foreign key. In a
-- million-row COPY the check ran as a trigger per row, about half the upload's time (bench:campaign-upload).
-- Rows are written only by an upload holding its campaign's row locked (campaign-audience-copy.ts),
-- and campaigns are never deleted, so nothing can leave a row without its campaign.
ALTER TABLE "campaign_recipients" DROP CONSTRAINT "campaign_recipients_campaign_id_campaigns_id_fk";

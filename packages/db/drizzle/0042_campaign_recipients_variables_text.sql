-- Issue 43: an audience row's variables as JSON text, not jsonb. The upload writes a million rows
-- by COPY, and parsing each row's variables into jsonb was a large part of what that COPY cost
-- (bench:campaign-upload); nothing queries inside them: they are parsed when a row is read.
ALTER TABLE "campaign_recipients" ALTER COLUMN "variables" SET DATA TYPE text USING "variables"::text;

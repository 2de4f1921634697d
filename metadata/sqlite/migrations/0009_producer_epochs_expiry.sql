-- When each producer_epochs row was last bumped (unix ms, the store's
-- clock), indexed so that ExpireProducerEpochs reads only the rows past
-- the expiration (metadata.ProducerEpochCutoff), oldest first, whatever
-- the number of idle rows. Rows of earlier releases count from now.
ALTER TABLE producer_epochs ADD COLUMN bumped_ms INTEGER NOT NULL DEFAULT 0;
UPDATE producer_epochs SET bumped_ms = CAST(strftime('%s', 'now') AS INTEGER) * 1000;
CREATE INDEX producer_epochs_bumped ON producer_epochs (bumped_ms);

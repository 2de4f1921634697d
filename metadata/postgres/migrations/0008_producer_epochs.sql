-- Producer epochs (metadata/producers.go, KIP-360): per producer id that
-- asked InitProducerId for its next epoch, the epoch it holds and the one
-- before its last bump (-1: none). An id issued by InitProducer without a
-- row holds epoch 0.
CREATE TABLE producer_epochs (
    producer_id  bigint   PRIMARY KEY,
    epoch        smallint NOT NULL,
    last_epoch   smallint NOT NULL
);

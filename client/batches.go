package client

import (
	"errors"
	"fmt"
	"math"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/kbatch"
)

// The batch data plane. ProduceBatches takes Kafka v2 record batches the
// client encodes (and compresses) itself, and FetchRequest.batches and
// SubscribeRequest.batches answer with stored batches, which the client
// decodes. The agent then neither decodes nor re-encodes records.

// Idempotence are the producer fields of an idempotent batch.
type Idempotence struct {
	ProducerID    int64
	ProducerEpoch int32
	BaseSequence  int32
}

// EncodeBatch encodes records as one Kafka v2 record batch for
// ProduceBatches, compressed with comp. A record's zero timestamp is now;
// NullValue makes a null value. idem, when not nil, sets the producer
// fields of an idempotent producer (sequences count records).
func EncodeBatch(records []*floev1.Record, comp floev1.Compression, idem *Idempotence) ([]byte, error) {
	if len(records) == 0 {
		return nil, errors.New("client: encode batch: no records")
	}
	if comp < floev1.Compression_COMPRESSION_NONE || comp > floev1.Compression_COMPRESSION_ZSTD {
		return nil, fmt.Errorf("client: encode batch: unknown compression %d", comp)
	}
	opts := kbatch.DefaultEncodeOptions()
	opts.Compression = kbatch.Compression(comp)
	if idem != nil {
		if idem.ProducerEpoch < 0 || idem.ProducerEpoch > math.MaxInt16 {
			return nil, fmt.Errorf("client: encode batch: producer epoch %d out of range", idem.ProducerEpoch)
		}
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = idem.ProducerID, int16(idem.ProducerEpoch), idem.BaseSequence
	}
	now := time.Now().UnixMilli()
	recs := make([]kbatch.Record, len(records))
	for i, r := range records {
		if r.GetNullValue() && len(r.GetValue()) > 0 {
			return nil, fmt.Errorf("client: encode batch: record %d has null_value set and a %d-byte value", i, len(r.GetValue()))
		}
		ts := r.GetTimestampMs()
		if ts == 0 {
			ts = now
		}
		kr := kbatch.Record{Timestamp: ts, Key: r.Key, Value: r.GetValue()}
		switch {
		case r.GetNullValue():
			kr.Value = nil
		case kr.Value == nil:
			kr.Value = []byte{}
		}
		if n := len(r.GetHeaders()); n > 0 {
			kr.Headers = make([]kbatch.Header, n)
			for j, h := range r.GetHeaders() {
				kr.Headers[j] = kbatch.Header{Key: h.GetKey(), Value: h.GetValue()}
			}
		}
		recs[i] = kr
	}
	b, err := kbatch.Encode(recs, opts)
	if err != nil {
		return nil, fmt.Errorf("client: encode batch: %w", err)
	}
	return b, nil
}

// DecodeBatches decodes the stored batches of a FetchResponse or
// SubscribeResponse (base offsets set by the agent) into records of
// partition, leaving out those below from (the first batch may start
// before the offset asked for). maxDecompressed bounds a compressed
// batch's records (0: kbatch.DefaultMaxDecompressed).
func DecodeBatches(b []byte, partition int32, from int64, maxDecompressed int) ([]*floev1.Record, error) {
	var out []*floev1.Record
	err := kbatch.SplitStored(b, func(batch []byte) error {
		_, recs, err := kbatch.DecodeStored(batch, maxDecompressed)
		if err != nil {
			return err
		}
		for _, kr := range recs {
			if kr.Offset < from {
				continue
			}
			r := &floev1.Record{Key: kr.Key, Value: kr.Value, NullValue: kr.Value == nil, TimestampMs: kr.Timestamp,
				Offset: kr.Offset, Partition: partition}
			if len(kr.Headers) > 0 {
				r.Headers = make([]*floev1.Header, len(kr.Headers))
				for j, h := range kr.Headers {
					r.Headers[j] = &floev1.Header{Key: h.Key, Value: h.Value}
				}
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("client: decode batches: %w", err)
	}
	return out, nil
}

// WalkBatches walks the stored batches of a FetchResponse or
// SubscribeResponse (base offsets set by the agent) as DecodeBatches
// checks them, calling fn with each record from offset from on, without
// building records: for a reader that only looks at offsets, timestamps
// and values. The record fn sees aliases b (or a compressed batch's
// decompressed records) and is reused: copy what is kept. maxDecompressed
// is as for DecodeBatches. It returns the records passed to fn; fn's error
// stops the walk and is returned as is.
func WalkBatches(b []byte, from int64, maxDecompressed int, fn func(r *kbatch.Record) error) (int, error) {
	n := 0
	each := func(r *kbatch.Record) error {
		if r.Offset < from {
			return nil
		}
		n++
		return fn(r)
	}
	for at := 0; at < len(b); {
		info, err := kbatch.WalkStored(b[at:], maxDecompressed, each)
		if err != nil {
			if errors.Is(err, kbatch.ErrCorrupt) || errors.Is(err, kbatch.ErrTooLarge) {
				return n, fmt.Errorf("client: decode batches: batch at byte %d: %w", at, err)
			}
			return n, err
		}
		at += info.BatchLength
	}
	return n, nil
}

// ResponseRecords returns a SubscribeResponse's records: its records, or
// in batches mode its decoded batches from from on.
func ResponseRecords(resp *floev1.SubscribeResponse, from int64) ([]*floev1.Record, error) {
	if len(resp.GetBatches()) == 0 {
		return resp.GetRecords(), nil
	}
	return DecodeBatches(resp.GetBatches(), resp.GetPartition(), from, 0)
}

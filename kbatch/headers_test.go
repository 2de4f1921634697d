package kbatch

import (
	"errors"
	"testing"
)

// emptyHeaders returns a record of n empty headers and nothing else.
func emptyHeaders(n int) Record {
	r := Record{Timestamp: 1700000000000, Value: []byte{}, Headers: make([]Header, n)}
	return r
}

// Each header counts HeaderOverhead bytes against the record limit, in
// Validate and in DecodeStoredLimits: a record of 200,000 empty headers
// (400 KB on the wire, tens of MB once decoded) is not a record of zero
// bytes. Before, both took it as zero bytes and accepted it under a limit
// of 1 MiB.
func TestHeadersCountAgainstRecordLimit(t *testing.T) {
	const limit = 1 << 20
	over := mustEncode(t, []Record{emptyHeaders(limit/HeaderOverhead + 1)}, EncodeOptions{Compression: Zstd, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
	at := mustEncode(t, []Record{emptyHeaders(limit / HeaderOverhead)}, DefaultEncodeOptions())
	lim := Limits{MaxRecordBytes: limit}

	c, err := Validate(at, lim, nil, nil)
	if err != nil || c.RecordBytes != limit/HeaderOverhead*HeaderOverhead {
		t.Fatalf("record at the limit: %+v, %v", c, err)
	}
	if _, err := Validate(over, lim, nil, nil); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("record of %d empty headers: %v, want ErrRecordTooLarge", limit/HeaderOverhead+1, err)
	}
	if _, recs, err := DecodeStoredLimits(at, lim); err != nil || len(recs[0].Headers) != limit/HeaderOverhead {
		t.Fatalf("decode at the limit: %v", err)
	}
	if _, _, err := DecodeStoredLimits(over, lim); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("decode over the limit: %v, want ErrRecordTooLarge", err)
	}
	// Key, value and header bytes count with the overhead.
	r := Record{Timestamp: 1, Key: make([]byte, 40), Value: make([]byte, 40), Headers: []Header{{Key: "k", Value: make([]byte, 9)}}}
	b := mustEncode(t, []Record{r}, DefaultEncodeOptions())
	if _, err := Validate(b, Limits{MaxRecordBytes: 100}, nil, nil); err != nil {
		t.Fatalf("100 bytes counted under a limit of 100: %v", err)
	}
	if _, err := Validate(b, Limits{MaxRecordBytes: 99}, nil, nil); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("100 bytes counted under a limit of 99: %v", err)
	}
	if _, _, err := DecodeStoredLimits(b, Limits{MaxRecordBytes: 99}); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("decode of 100 bytes counted under a limit of 99: %v", err)
	}
}

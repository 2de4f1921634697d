package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// startOn runs an agent on meta and store and returns a client of it.
func startOn(t *testing.T, meta metadata.Store, store objectstore.Store) *client.Client {
	t.Helper()
	return startOnWith(t, meta, store, func(batcher.CommittedFile) {})
}

// keyedBackends runs fn on PostgreSQL with the S3 server and on SQLite
// with a directory.
func keyedBackends(t *testing.T, fn func(t *testing.T, meta metadata.Store, store objectstore.Store)) {
	t.Run("postgres+s3", func(t *testing.T) {
		ctx := context.Background()
		meta := openPostgres(t, testenv.Postgres(t))
		sc := testenv.S3(t)
		c := s3store.DefaultConfig()
		c.Bucket, c.Endpoint, c.Region, c.AccessKey, c.SecretKey, c.PathStyle = sc.Bucket, sc.Endpoint, sc.Region, sc.AccessKey, sc.SecretKey, true
		s3, err := s3store.New(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s3.Close() })
		fn(t, meta, s3)
	})
	t.Run("sqlite+dir", func(t *testing.T) {
		meta, err := sqlite.Open(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { meta.Close() })
		dir, err := objectstore.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fn(t, meta, dir)
	})
}

// A compacted topic read from earliest, by Fetch (small responses, so
// that fetches start inside gaps) and by Subscribe, gives every live key's
// latest value at its original offset, and never an error at a gap.
func TestReadCompactedTopic(t *testing.T) {
	keyedBackends(t, func(t *testing.T, meta metadata.Store, store objectstore.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := startOn(t, meta, store)
		if _, err := c.CreateTopic(ctx, "keyed", 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
			t.Fatal(err)
		}
		// Six rounds of k0..k4 (offset 5*round + key); k4 is written in
		// rounds 0..2 only, "other" in its place after. (The produce API
		// has no null values: tombstones are tested in the compactor.)
		const rounds, keys = 6, 5
		original := map[int64]string{}
		for r := range rounds {
			var recs []*floev1.Record
			for k := range keys {
				if k == 4 && r > 2 {
					recs = append(recs, client.Value([]byte("other"), []byte(fmt.Sprintf("r%d", r))))
					original[int64(r*keys+k)] = fmt.Sprintf("other=r%d", r)
					continue
				}
				v := []byte(fmt.Sprintf("r%d", r))
				recs = append(recs, client.Value([]byte(fmt.Sprintf("k%d", k)), v))
				original[int64(r*keys+k)] = fmt.Sprintf("k%d=%s", k, v)
			}
			if _, err := c.Produce(ctx, "keyed", 0, recs...); err != nil {
				t.Fatal(err)
			}
		}
		comp, err := compactor.New(meta, store, func() compactor.Config {
			cfg := compactor.DefaultConfig()
			cfg.Owner, cfg.MergeSmallBytes, cfg.CompactMinAge = "test", 0, 0
			return cfg
		}())
		if err != nil {
			t.Fatal(err)
		}
		r, err := comp.RunOnce(ctx)
		if err != nil || r.RecordsRemoved == 0 {
			t.Fatalf("compaction: %+v, %v", r, err)
		}
		// The latest values: k0..k3 and "other" of the last round (the
		// tail), k4 of round 2.
		want := map[string]string{}
		for off := int64(0); off < rounds*keys; off++ {
			k, v := splitKV(original[off])
			want[k] = v
		}
		check := func(how string, recs []*floev1.Record) {
			t.Helper()
			checkCompacted(t, how, recs, original, want, rounds*keys)
		}
		var fetched []*floev1.Record
		for off := int64(0); off < rounds*keys; {
			f, err := c.Fetch(ctx, "keyed", 0, off, 1, 5000)
			if err != nil {
				t.Fatalf("fetch at %d: %v", off, err)
			}
			if f.GetNextOffset() <= off {
				t.Fatalf("fetch at %d: next offset %d", off, f.GetNextOffset())
			}
			fetched = append(fetched, f.GetRecords()...)
			off = f.GetNextOffset()
		}
		check("fetch", fetched)
		var subscribed []*floev1.Record
		sctx, stop := context.WithCancel(ctx)
		err = c.Subscribe(sctx, &floev1.SubscribeRequest{Topic: "keyed", MaxBytes: 1,
			Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}},
			func(r *floev1.SubscribeResponse) error {
				subscribed = append(subscribed, r.GetRecords()...)
				if n := len(subscribed); n > 0 && subscribed[n-1].GetOffset() == rounds*keys-1 {
					stop()
				}
				return nil
			})
		stop()
		if ctx.Err() != nil {
			t.Fatalf("subscription did not reach the end: %v", subscribed)
		}
		check("subscribe", subscribed)
	})
}

func splitKV(s string) (string, string) {
	for i := range s {
		if s[i] == '=' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// checkCompacted checks records read from a compacted partition: in offset
// order, each as it was produced at its offset (original: offset to
// "key=value"), the latest value of every key (want) and fewer than total
// records (something was compacted).
func checkCompacted(t *testing.T, how string, recs []*floev1.Record, original map[int64]string, want map[string]string, total int) {
	t.Helper()
	got := map[string]string{}
	last := int64(-1)
	for _, rec := range recs {
		kv := fmt.Sprintf("%s=%s", rec.GetKey(), rec.GetValue())
		if rec.GetOffset() <= last || original[rec.GetOffset()] != kv {
			t.Fatalf("%s: record %s at offset %d (after %d), originally %q", how, kv, rec.GetOffset(), last, original[rec.GetOffset()])
		}
		last = rec.GetOffset()
		got[string(rec.GetKey())] = string(rec.GetValue())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: latest values %v, want %v", how, got, want)
	}
	if len(recs) >= total {
		t.Errorf("%s: %d records, nothing was compacted", how, len(recs))
	}
}

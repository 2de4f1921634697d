package kafka_test

import (
	"context"
	"encoding/binary"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkKafkaFetch reads a 16 MiB partition from its start with raw
// Fetch requests (4 MiB answers, from the read cache after the first
// pass) and reports the process's CPU time (server and client, in one
// process) per MiB served: compare runs of one machine, as ratios.
//
//	go test -run '^$' -bench BenchmarkKafkaFetch -benchtime 20x ./kafka/
func BenchmarkKafkaFetch(b *testing.B) {
	br := startBroker(b, nil)
	cl := newClient(b, br, kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(50*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(b, cl, "bench", 1)
	const n, size = 16 << 10, 1 << 10
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "bench", Value: make([]byte, size)}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	readAll := func() int64 {
		var bytes int64
		for off := int64(0); off < n; {
			req := kmsg.NewPtrFetchRequest()
			req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 4<<20, 1, 0
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "bench"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes = off, 4<<20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				b.Fatal(err)
			}
			rb := resp.Topics[0].Partitions[0].RecordBatches
			if len(rb) == 0 {
				b.Fatalf("no records at %d", off)
			}
			bytes += int64(len(rb))
			for at := 0; at+61 <= len(rb); { // walk the batch headers to the next offset
				base := int64(binary.BigEndian.Uint64(rb[at:]))
				length := int(binary.BigEndian.Uint32(rb[at+8:]))
				delta := int64(binary.BigEndian.Uint32(rb[at+23:]))
				off = base + delta + 1
				at += 12 + length
			}
		}
		return bytes
	}
	readAll() // the read cache is warm from here on
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	var total int64
	for range b.N {
		total += readAll()
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.SetBytes(total / int64(b.N))
	b.ReportMetric(float64(cpu.Microseconds())/1000/(float64(total)/(1<<20)), "cpu-ms/MiB")
}

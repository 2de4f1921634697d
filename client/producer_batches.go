package client

import (
	"context"
	"fmt"
	"math/rand/v2"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/internal/kpartition"
)

// encodeBatches builds r.breq from r.req (ProducerOptions.Batches): one
// batch per partition the records go to, partitioned as the agent does
// when Send names no partition (Kafka's murmur2 of the key; null keys: one
// partition per request).
func (p *Producer) encodeBatches(r *prodReq) error {
	recs := r.req.GetRecords()
	var idem *Idempotence
	if r.req.ProducerId != nil {
		idem = &Idempotence{ProducerID: r.req.GetProducerId(), ProducerEpoch: r.req.GetProducerEpoch(), BaseSequence: r.req.GetBaseSequence()}
	}
	var parts []int32
	if r.req.Partition != nil {
		parts = []int32{r.req.GetPartition()}
		r.groups = [][]int{make([]int, len(recs))}
		for i := range recs {
			r.groups[0][i] = i
		}
	} else {
		if p.partitions <= 0 {
			err := p.withRetries(func(ctx context.Context) error {
				d, err := p.c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: p.topic})
				if err == nil {
					p.partitions = d.GetTopic().GetPartitions()
				}
				return err
			})
			if err != nil {
				return fmt.Errorf("client: describe topic %q for its partitions: %w", p.topic, err)
			}
			if p.partitions <= 0 {
				return fmt.Errorf("client: topic %q has no partitions", p.topic)
			}
		}
		byPart := map[int32]int{}
		nullKeyPart := int32(-1)
		for i, rec := range recs {
			var part int32
			if rec.Key != nil {
				part = kpartition.ForKey(rec.GetKey(), p.partitions)
			} else {
				if nullKeyPart < 0 {
					nullKeyPart = rand.Int32N(p.partitions)
				}
				part = nullKeyPart
			}
			g, ok := byPart[part]
			if !ok {
				g = len(parts)
				byPart[part] = g
				parts = append(parts, part)
				r.groups = append(r.groups, nil)
			}
			r.groups[g] = append(r.groups[g], i)
		}
	}
	r.breq = &floev1.ProduceBatchesRequest{Topic: p.topic, Partitions: make([]*floev1.PartitionBatches, len(parts))}
	group := make([]*floev1.Record, 0, len(recs))
	for g, part := range parts {
		group = group[:0]
		for _, i := range r.groups[g] {
			group = append(group, recs[i])
		}
		b, err := EncodeBatch(group, p.opts.Compression, idem)
		if err != nil {
			return err
		}
		r.breq.Partitions[g] = &floev1.PartitionBatches{Partition: part, Batches: b}
	}
	return nil
}

// fromBatches turns the answer to r.breq into the answer the per-record
// path gives: each record's offset and partition, in request order.
func (r *prodReq) fromBatches(resp *floev1.ProduceBatchesResponse) (*floev1.ProduceResponse, error) {
	if len(resp.GetResults()) != len(r.groups) {
		return nil, fmt.Errorf("client: produce batches: %d results for %d batches", len(resp.GetResults()), len(r.groups))
	}
	n := len(r.req.GetRecords())
	out := &floev1.ProduceResponse{Offsets: make([]int64, n), Partitions: make([]int32, n), LogAppendTimeMs: resp.GetLogAppendTimeMs()}
	for g, res := range resp.GetResults() {
		for j, i := range r.groups[g] {
			out.Offsets[i] = res.GetBaseOffset() + int64(j)
			out.Partitions[i] = res.GetPartition()
		}
		out.Duplicate = out.Duplicate || res.GetDuplicate()
	}
	return out, nil
}

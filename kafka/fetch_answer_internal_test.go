package kafka

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/agent"
)

// TestFetchFrameGolden: the frame fetchFrame writes (own bytes and held
// segments, in order) is byte for byte kmsg's encoding of the same
// response with the records copied in, at every version served.
func TestFetchFrameGolden(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.IntN(256))
		}
		return b
	}
	for v := int16(4); v <= 12; v++ {
		for round := range 20 {
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(v)
			resp.ThrottleMillis, resp.ErrorCode, resp.SessionID = rnd.Int32(), int16(rnd.IntN(3)), rnd.Int32()
			a := &fetchAnswer{FetchResponse: resp}
			want := map[*kmsg.FetchResponseTopicPartition][]byte{}
			resp.Topics = make([]kmsg.FetchResponseTopic, rnd.IntN(4))
			for ti := range resp.Topics {
				st := &resp.Topics[ti]
				*st = kmsg.NewFetchResponseTopic()
				st.Topic = string(randBytes(rnd.IntN(300))) // past 127: a two-byte compact length
				st.Partitions = make([]kmsg.FetchResponseTopicPartition, rnd.IntN(4))
				for pi := range st.Partitions {
					sp := &st.Partitions[pi]
					*sp = kmsg.NewFetchResponseTopicPartition()
					sp.Partition, sp.ErrorCode, sp.PreferredReadReplica = rnd.Int32(), int16(rnd.IntN(5)), -1
					sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = rnd.Int64(), rnd.Int64(), rnd.Int64()
					sp.RecordBatches = noRecords
					switch rnd.IntN(3) {
					case 0: // held segments
						var h agent.KafkaHeld
						var all []byte
						for range 1 + rnd.IntN(3) {
							s := randBytes(1 + rnd.IntN(20000))
							h.Segments, h.Size, all = append(h.Segments, s), h.Size+len(s), append(all, s...)
						}
						a.hold(sp, h)
						want[sp] = all
					case 1: // records of its own
						sp.RecordBatches = randBytes(rnd.IntN(100))
					}
				}
			}
			frame, _, ok := fetchFrame(nil, 7, a)
			if len(a.held) == 0 {
				if ok {
					t.Fatalf("v%d: a frame for an answer without holds", v)
				}
				continue
			}
			if !ok {
				t.Fatalf("v%d round %d: not plain", v, round)
			}
			var got []byte
			for _, p := range frame {
				got = append(got, p...)
			}
			for sp, b := range want {
				sp.RecordBatches = b
			}
			if exp := appendResponse(nil, 7, resp); !bytes.Equal(got, exp) {
				t.Fatalf("v%d round %d: the frame (%d bytes) differs from kmsg's (%d bytes)", v, round, len(got), len(exp))
			}
		}
	}
}

// TestFetchFrameNotPlain: an answer with a field the frame writer does not
// encode (a tagged field) is written by kmsg, its records copied in.
func TestFetchFrameNotPlain(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	st := kmsg.NewFetchResponseTopic()
	st.Topic = "t"
	sp := kmsg.NewFetchResponseTopicPartition()
	sp.DivergingEpoch.Epoch = 3
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	a := &fetchAnswer{FetchResponse: resp}
	a.hold(&resp.Topics[0].Partitions[0], agent.KafkaHeld{Segments: [][]byte{[]byte("abc")}, Size: 3})
	if _, _, ok := fetchFrame(nil, 1, a); ok {
		t.Fatal("a tagged field was not seen")
	}
	out := appendResponse(nil, 1, a)
	var back kmsg.FetchResponse
	back.SetVersion(12)
	if err := back.ReadFrom(out[9:]); err != nil || string(back.Topics[0].Partitions[0].RecordBatches) != "abc" || len(a.held) != 0 {
		t.Fatalf("%v: %+v (holds left %d)", err, back.Topics, len(a.held))
	}
}

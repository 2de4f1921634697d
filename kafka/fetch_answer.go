package kafka

import (
	"bufio"
	"encoding/binary"
	"net"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/agent"
)

// A Fetch answer's records are not copied on their way out: each
// partition's read (agent.KafkaHeld) references the stored batches where
// the read cache holds them, and the writer writes the response frame as
// pieces — the response's own fields, encoded here exactly as kmsg lays
// them out (a golden test holds the two equal), and between them the held
// segments — in one writev on a TCP connection. The holds are released
// once the frame is written (or the answer dropped: Server.written). What
// an answer holds counts in the connection's response budget
// (respbudget.go), so Config.MaxBufferedBytes bounds it as before.

// fetchAnswer is a FetchResponse whose partitions in held carry those
// records (their RecordBatches left empty).
type fetchAnswer struct {
	*kmsg.FetchResponse
	held map[*kmsg.FetchResponseTopicPartition]*agent.KafkaHeld
	size int64 // the held bytes
}

// hold makes h sp's records.
func (a *fetchAnswer) hold(sp *kmsg.FetchResponseTopicPartition, h agent.KafkaHeld) {
	if a.held == nil {
		a.held = map[*kmsg.FetchResponseTopicPartition]*agent.KafkaHeld{}
	}
	a.held[sp] = &h
	a.size += int64(h.Size)
}

// release lets go of every hold; calls after the first do nothing.
func (a *fetchAnswer) release() {
	for _, h := range a.held {
		h.Release()
	}
	a.held, a.size = nil, 0
}

// fill copies the held records into the response and releases them: the
// plain response, for writers other than writeFetch.
func (a *fetchAnswer) fill() {
	for sp, h := range a.held {
		b := make([]byte, 0, h.Size)
		for _, s := range h.Segments {
			b = append(b, s...)
		}
		sp.RecordBatches = b
	}
	a.release()
}

// AppendTo encodes the response with its records copied in (its holds are
// released: encode it once).
func (a *fetchAnswer) AppendTo(dst []byte) []byte {
	a.fill()
	return a.FetchResponse.AppendTo(dst)
}

// splice is where held segments go in an encoded body: before own[at].
type splice struct {
	at   int
	segs [][]byte
}

// plainFetch tells whether appendFetchBody encodes r: v4 to v12, without
// tagged fields or aborted transactions (floe sets none).
func plainFetch(r *kmsg.FetchResponse) bool {
	if r.Version < 4 || r.Version > 12 || r.UnknownTags.Len() > 0 || len(r.Brokers) > 0 {
		return false
	}
	for i := range r.Topics {
		t := &r.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.AbortedTransactions != nil || p.UnknownTags.Len() > 0 ||
				p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 || p.CurrentLeader.UnknownTags.Len() > 0 ||
				p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 || p.SnapshotID.UnknownTags.Len() > 0 {
				return false
			}
		}
	}
	return true
}

// appendFetchBody appends a's body (plainFetch) to dst as kmsg encodes it,
// but for the held records, which go where the splices say.
func appendFetchBody(dst []byte, a *fetchAnswer) ([]byte, []splice) {
	r := a.FetchResponse
	flex := r.Version >= 12
	arr := func(dst []byte, n int) []byte {
		if flex {
			return kbin.AppendCompactArrayLen(dst, n)
		}
		return kbin.AppendArrayLen(dst, n)
	}
	var sps []splice
	dst = kbin.AppendInt32(dst, r.ThrottleMillis)
	if r.Version >= 7 {
		dst = kbin.AppendInt16(dst, r.ErrorCode)
		dst = kbin.AppendInt32(dst, r.SessionID)
	}
	dst = arr(dst, len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		if flex {
			dst = kbin.AppendCompactString(dst, t.Topic)
		} else {
			dst = kbin.AppendString(dst, t.Topic)
		}
		dst = arr(dst, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			dst = kbin.AppendInt64(dst, p.LastStableOffset)
			if r.Version >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if flex { // no aborted transactions: a null array
				dst = kbin.AppendCompactNullableArrayLen(dst, 0, true)
			} else {
				dst = kbin.AppendNullableArrayLen(dst, 0, true)
			}
			if r.Version >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			switch h := a.held[p]; {
			case h != nil && h.Size > 0:
				if flex {
					dst = kbin.AppendUvarint(dst, uint32(h.Size)+1)
				} else {
					dst = kbin.AppendInt32(dst, int32(h.Size))
				}
				sps = append(sps, splice{at: len(dst), segs: h.Segments})
			case flex:
				dst = kbin.AppendCompactNullableBytes(dst, p.RecordBatches)
			default:
				dst = kbin.AppendNullableBytes(dst, p.RecordBatches)
			}
			if flex {
				dst = kbin.AppendUvarint(dst, 0) // no tagged fields
			}
		}
		if flex {
			dst = kbin.AppendUvarint(dst, 0)
		}
	}
	if flex {
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst, sps
}

// pieces are own with the splices' segments in place.
func pieces(own []byte, sps []splice) net.Buffers {
	out := make(net.Buffers, 0, 2*len(sps)+1)
	from := 0
	for _, sp := range sps {
		if sp.at > from {
			out = append(out, own[from:sp.at])
		}
		out = append(out, sp.segs...)
		from = sp.at
	}
	if from < len(own) {
		out = append(out, own[from:])
	}
	return out
}

// fetchFrame is a's response frame as pieces: buf (reused) holds its own
// bytes, the held segments are referenced. ok false: a is not plain
// (plainFetch), write it with appendResponse.
func fetchFrame(buf []byte, correlation int32, a *fetchAnswer) (net.Buffers, []byte, bool) {
	if len(a.held) == 0 || !plainFetch(a.FetchResponse) {
		return nil, buf, false
	}
	buf = append(buf[:0], 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(correlation))
	if a.IsFlexible() {
		buf = append(buf, 0) // the response header's tagged fields
	}
	buf, sps := appendFetchBody(buf, a)
	n := len(buf) - 4
	for _, sp := range sps {
		for _, s := range sp.segs {
			n += len(s)
		}
	}
	binary.BigEndian.PutUint32(buf, uint32(n))
	return pieces(buf, sps), buf, true
}

// writeResponse writes resp's frame, flushed, and returns buf for reuse:
// a fetchAnswer's records straight from where they are held (one writev
// on TCP), any other response encoded into buf.
func (c *conn) writeResponse(bw *bufio.Writer, buf []byte, correlation int32, resp kmsg.Response) ([]byte, error) {
	if a, ok := resp.(*fetchAnswer); ok {
		var frame net.Buffers
		var plain bool
		if frame, buf, plain = fetchFrame(buf, correlation, a); plain {
			if tcp, ok := c.nc.(*net.TCPConn); ok && bw.Buffered() == 0 {
				_, err := frame.WriteTo(tcp)
				return buf, err
			}
			for _, p := range frame {
				if _, err := bw.Write(p); err != nil {
					return buf, err
				}
			}
			return buf, bw.Flush()
		}
	}
	buf = appendResponse(buf[:0], correlation, resp)
	_, err := bw.Write(buf)
	if err == nil {
		err = bw.Flush()
	}
	return buf, err
}

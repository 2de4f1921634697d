package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

const consumeAbout = `Print the records of TOPIC, from -from to the end of the log (or, with
-follow, for ever, as they commit). A follower survives agent and
PostgreSQL restarts: it resubscribes, through the next -addr if several are
given, from the offset after the last record printed (no gap, no
duplicate), retrying with backoff; other errors end it with one line and
exit status 1.

Text output (-o text) is one line per record: the fields asked for
(partition and offset, timestamp, key, headers as k=v,k=v) then the value,
separated by -separator. JSON output (-o json) is one object per line:
  {"topic":..., "partition":..., "offset":..., "timestamp": unix ms,
   "key": string or null, "value": string or null,
   "headers": [{"key":..., "value":...}]}
Bytes are a JSON string when they are valid UTF-8; otherwise they are
base64 (standard, padded) and the object says so with "key_encoding",
"value_encoding" (or, in a header, "value_encoding") set to "base64".`

func runConsume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("floe consume", "TOPIC", consumeAbout, 1, 1)
	fs := cmd.fs
	addr := addrFlag(fs)
	partition := partitionFlag{p: -1, what: "all partitions"}
	fs.Var(&partition, "partition", "only this partition (-1: all)")
	from := fs.String("from", "earliest", "earliest, latest, an offset, or @timestamp (unix ms or RFC 3339)")
	follow := fs.Bool("follow", false, "keep waiting for new records (otherwise stop at the end of the log)")
	fs.BoolVar(follow, "f", false, "short for -follow")
	maxRecords := fs.Int64("max", 0, "stop after this many records (0: no limit)")
	printKey := fs.Bool("print-key", false, "print the key before the value (text output)")
	printOffset := fs.Bool("print-offset", false, "print partition and offset before the value (text output)")
	printTS := fs.Bool("print-timestamp", false, "print the timestamp (RFC 3339, UTC, milliseconds) before the value (text output)")
	printHeaders := fs.Bool("print-headers", false, "print the headers as k=v,k=v before the value (text output)")
	sep := fs.String("separator", "\t", "separator between printed fields (text output)")
	output := fs.String("o", "text", "output format: text or json (one object per line)")
	group := fs.String("group", "", "consume as a member of this consumer group (see group_consume.go)")
	commitEvery := fs.Duration("commit-interval", 5*time.Second, "with -group: commit printed records this often")
	session := fs.Duration("session-timeout", 0, "with -group: the member's session timeout (0: the agent's default)")
	pos, err := cmd.parse(args, stdout)
	if err != nil {
		return err
	}
	topic := pos[0]
	if *output != "text" && *output != "json" {
		return fmt.Errorf("flag -o: %q is neither text nor json", *output)
	}
	if *maxRecords < 0 {
		return fmt.Errorf("flag -max: %d must not be negative", *maxRecords)
	}
	if *group != "" && partition.p >= 0 {
		return fmt.Errorf("flag -partition: not with -group (the group assigns partitions)")
	}
	var start *floev1.StartPosition
	if *group == "" {
		if start, err = parseFrom(*from); err != nil {
			return err
		}
	}
	clients, closeAll, err := dialAll(addr)
	if err != nil {
		return err
	}
	defer closeAll()
	if *group != "" {
		w := bufio.NewWriter(stdout)
		return (&groupConsume{clients: clients, topic: topic, group: *group, from: *from, follow: *follow, max: *maxRecords,
			commitInterval: *commitEvery, sessionTimeout: *session, w: w, stderr: stderr,
			pr: &printer{w: w, topic: topic, sep: *sep, json: *output == "json",
				key: *printKey, offset: *printOffset, ts: *printTS, headers: *printHeaders}}).run(ctx)
	}

	// Stored batches, decoded here: the agent does not re-encode records.
	req := &floev1.SubscribeRequest{Topic: topic, Start: start, Batches: true}
	if partition.p >= 0 {
		req.Partitions = []int32{partition.p}
	}
	retry := client.ResumeOptions{OnRetry: func(a string, err error, wait time.Duration) {
		fmt.Fprintf(stderr, "floe: consume: %s from %s; resuming in %v\n", oneLine(err), a, wait.Round(time.Millisecond))
	}}
	// Without -follow: resolve the start and end offsets now, stop at the end.
	remaining := map[int32]int64{} // partition -> end offset still to reach
	if !*follow {
		if req, err = boundedRequest(ctx, clients[0], req, remaining); err != nil {
			return fmt.Errorf("consume %q: %w", topic, err)
		}
		if len(remaining) == 0 {
			return nil
		}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	pr := printer{w: w, topic: topic, sep: *sep, json: *output == "json",
		key: *printKey, offset: *printOffset, ts: *printTS, headers: *printHeaders}
	var n int64
	err = client.SubscribeResume(ctx, clients, req, retry, func(resp *floev1.SubscribeResponse) error {
		for _, r := range resp.GetRecords() {
			p := resp.GetPartition()
			if !*follow {
				end, ok := remaining[p]
				if !ok || r.GetOffset() >= end {
					continue
				}
			}
			if err := pr.print(p, r); err != nil {
				return err
			}
			n++
			if *maxRecords > 0 && n >= *maxRecords {
				return client.ErrStop
			}
			if !*follow && r.GetOffset() >= remaining[p]-1 {
				delete(remaining, p)
			}
		}
		if *follow {
			return w.Flush()
		}
		if len(remaining) == 0 {
			return client.ErrStop
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("consume %q: %w", topic, err)
	}
	return nil
}

// boundedRequest resolves req's start into offsets and records in
// remaining the end offset of each partition that has records to read. It
// returns the request for those partitions.
func boundedRequest(ctx context.Context, c *client.Client, req *floev1.SubscribeRequest, remaining map[int32]int64) (*floev1.SubscribeRequest, error) {
	starts, err := c.ResolveOffsets(ctx, req)
	if err != nil {
		return nil, err
	}
	ends, err := c.Log.ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: req.GetTopic(), Partitions: req.GetPartitions(),
		Spec: floev1.OffsetSpec_OFFSET_SPEC_LATEST})
	if err != nil {
		return nil, err
	}
	out := &floev1.SubscribeRequest{Topic: req.GetTopic(), Offsets: map[int32]int64{}, Batches: req.GetBatches()}
	for _, e := range ends.GetOffsets() {
		p, end := e.GetPartition(), e.GetOffset()
		off, ok := starts[p]
		if !ok {
			continue
		}
		if off > end {
			return nil, fmt.Errorf("offset %d of partition %d is past its end (%d)", off, p, end)
		}
		if off < end {
			remaining[p] = end
			out.Partitions = append(out.Partitions, p)
			out.Offsets[p] = off
		}
	}
	return out, nil
}

// printer writes records as text or JSON lines.
type printer struct {
	w                        *bufio.Writer
	topic, sep               string
	json                     bool
	key, offset, ts, headers bool
}

func (p *printer) print(partition int32, r *floev1.Record) error {
	if p.json {
		return p.printJSON(partition, r)
	}
	if p.offset {
		fmt.Fprintf(p.w, "%d%s%d%s", partition, p.sep, r.GetOffset(), p.sep)
	}
	if p.ts {
		p.w.WriteString(time.UnixMilli(r.GetTimestampMs()).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
		p.w.WriteString(p.sep)
	}
	if p.key {
		p.w.Write(r.GetKey())
		p.w.WriteString(p.sep)
	}
	if p.headers {
		for i, h := range r.GetHeaders() {
			if i > 0 {
				p.w.WriteByte(',')
			}
			p.w.WriteString(h.GetKey())
			p.w.WriteByte('=')
			p.w.Write(h.GetValue())
		}
		p.w.WriteString(p.sep)
	}
	p.w.Write(r.GetValue())
	return p.w.WriteByte('\n')
}

// jsonRecord is one line of -o json.
type jsonRecord struct {
	Topic         string       `json:"topic"`
	Partition     int32        `json:"partition"`
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []jsonHeader `json:"headers"`
}

type jsonHeader struct {
	Key           string `json:"key"`
	Value         string `json:"value"`
	ValueEncoding string `json:"value_encoding,omitempty"`
}

// jsonBytes is b as a string, or base64 with "base64" when b is not UTF-8.
func jsonBytes(b []byte) (string, string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}

func (p *printer) printJSON(partition int32, r *floev1.Record) error {
	jr := jsonRecord{Topic: p.topic, Partition: partition, Offset: r.GetOffset(), Timestamp: r.GetTimestampMs(),
		Headers: []jsonHeader{}}
	if r.Key != nil {
		k, enc := jsonBytes(r.Key)
		jr.Key, jr.KeyEncoding = &k, enc
	}
	if !r.GetNullValue() { // a null value (a tombstone) prints as null
		v, enc := jsonBytes(r.GetValue())
		jr.Value, jr.ValueEncoding = &v, enc
	}
	for _, h := range r.GetHeaders() {
		v, enc := jsonBytes(h.GetValue())
		jr.Headers = append(jr.Headers, jsonHeader{Key: h.GetKey(), Value: v, ValueEncoding: enc})
	}
	b, err := json.Marshal(jr)
	if err != nil {
		return err
	}
	p.w.Write(b)
	return p.w.WriteByte('\n')
}

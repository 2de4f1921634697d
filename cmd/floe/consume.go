package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

const consumeAbout = `Print the records of TOPIC, from -from to the end of the log (or, with
-follow, for ever, as they commit). The start takes kcat's and rpk's forms,
through -from or -o: earliest, latest, an offset, -N (the last N of each
partition), +N (after the first N), @TIME. -partition takes several. A follower survives agent and
PostgreSQL restarts: it resubscribes, through the next -addr if several are
given, from the offset after the last record printed (no gap, no
duplicate), retrying with backoff, and says on stderr when it lost the
subscription and when it reconnected; other errors end it with one line
and exit status 1.

Text output (-o text) is one line per record: the fields asked for
(partition and offset, timestamp, key, headers as k=v,k=v) then the value,
separated by -separator; or, with -f, a format with kcat's letters
('%t %p %o %k %s %h\n'). Headers are escaped (\\, \, and \= inside keys and
values, \n, \t, \xNN for control bytes and bytes that are not UTF-8).
JSON output (-o json) is one object per line:
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
	var partitions listFlag
	fs.Var(&partitions, "partition", "only these partitions (comma-separated or repeated; default all)")
	from := fs.String("from", "earliest", "where to start: "+startHelp)
	follow := fs.Bool("follow", false, "keep waiting for new records (otherwise stop at the end of the log)")
	exitAtEnd := fs.Bool("e", false, "stop at the end of the log (the default without -follow; kcat's -e)")
	maxRecords := fs.Int64("max", 0, "stop after this many records (0: no limit)")
	fs.Int64Var(maxRecords, "c", 0, "short for -max (kcat's and rpk's -c)")
	printKey := fs.Bool("print-key", false, "print the key before the value (text output)")
	printOffset := fs.Bool("print-offset", false, "print partition and offset before the value (text output)")
	printTS := fs.Bool("print-timestamp", false, "print the timestamp (RFC 3339, UTC, milliseconds) before the value (text output)")
	printHeaders := fs.Bool("print-headers", false, "print the headers as k=v,k=v (escaped) before the value (text output)")
	sep := fs.String("separator", "\t", "separator between printed fields (text output)")
	format := fs.String("f", "", formatHelp)
	output := fs.String("o", "text", "output format, text or json (one object per line); or, as in kcat and rpk, where to start (as -from)")
	group := fs.String("group", "", "consume as a member of this consumer group, from its committed positions")
	commitEvery := fs.Duration("commit-interval", 5*time.Second, "with -group: commit printed records this often")
	session := fs.Duration("session-timeout", 0, "with -group: the member's session timeout (0: the agent's default)")
	pos, err := cmd.parse(args, stdout)
	if err != nil {
		return err
	}
	topic := pos[0]
	if *output != "text" && *output != "json" {
		if !isStart(*output) {
			return fmt.Errorf("flag -o: %q is neither an output format (text, json) nor a start position (%s)", *output, startHelp)
		}
		*from, *output = *output, "text"
	}
	if *follow && *exitAtEnd {
		return errors.New("flags -follow and -e exclude each other")
	}
	if *maxRecords < 0 {
		return fmt.Errorf("flag -max: %d must not be negative", *maxRecords)
	}
	var parts []int32
	for _, s := range partitions {
		p, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil:
			return fmt.Errorf("flag -partition: %q is not a partition number", s)
		case p < 0 || p > math.MaxInt32:
			return fmt.Errorf("flag -partition: %d is out of range: 0 to %d", p, math.MaxInt32)
		}
		parts = append(parts, int32(p))
	}
	if *group != "" && len(parts) > 0 {
		return fmt.Errorf("flag -partition: not with -group (the group assigns partitions)")
	}
	pr := &printer{topic: topic, sep: *sep, json: *output == "json",
		key: *printKey, offset: *printOffset, ts: *printTS, headers: *printHeaders}
	if *format != "" {
		if pr.json {
			return errors.New("flags -f and -o json exclude each other")
		}
		if pr.format, err = parseFormat(*format); err != nil {
			return err
		}
	}
	var start startSpec
	if *group == "" {
		if start, err = parseStart(*from); err != nil {
			return fmt.Errorf("flag -from: %w", err)
		}
	}
	clients, closeAll, err := dialAll(addr)
	if err != nil {
		return err
	}
	defer closeAll()
	w := bufio.NewWriter(stdout)
	pr.w = w
	if *group != "" {
		return (&groupConsume{clients: clients, topic: topic, group: *group, from: *from, follow: *follow, max: *maxRecords,
			commitInterval: *commitEvery, sessionTimeout: *session, w: w, stderr: stderr, pr: pr}).run(ctx)
	}
	defer w.Flush()
	offsets, err := resolveStart(ctx, clients[0], topic, parts, start)
	if err != nil {
		return fmt.Errorf("consume %q: %w", topic, err)
	}
	// Stored batches, decoded here: the agent does not re-encode records.
	req := &floev1.SubscribeRequest{Topic: topic, Offsets: offsets, Batches: true}
	for p := range offsets {
		req.Partitions = append(req.Partitions, p)
	}
	slices.Sort(req.Partitions)
	rc := &reconnects{clients: clients, stderr: stderr}
	retry := client.ResumeOptions{OnRetry: rc.failed}
	// Without -follow: stop at the end offsets of now.
	remaining := map[int32]int64{} // partition -> end offset still to reach
	if !*follow {
		if req, err = boundedRequest(ctx, clients[0], req, remaining); err != nil {
			return fmt.Errorf("consume %q: %w", topic, err)
		}
		if len(remaining) == 0 {
			return nil
		}
	}
	var n int64
	err = client.SubscribeResume(ctx, clients, req, retry, func(resp *floev1.SubscribeResponse) error {
		rc.resumed()
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

// reconnects tells a follower's user when its subscription failed and
// when records flow again.
type reconnects struct {
	clients []*client.Client
	stderr  io.Writer
	next    string // the address tried after the last failure; "" when flowing
}

// failed is ResumeOptions.OnRetry.
func (r *reconnects) failed(addr string, err error, wait time.Duration) {
	i := slices.IndexFunc(r.clients, func(c *client.Client) bool { return c.Addr() == addr })
	r.next = r.clients[(i+1)%len(r.clients)].Addr()
	fmt.Fprintf(r.stderr, "floe: consume: lost the subscription at %s: %s; resubscribing through %s in %v\n",
		addr, explain(err, addr), r.next, wait.Round(time.Millisecond))
}

// resumed is called on each answer: the first after a failure says so.
func (r *reconnects) resumed() {
	if r.next != "" {
		fmt.Fprintf(r.stderr, "floe: consume: reconnected through %s; resuming after the last record printed (no gap, no duplicate)\n", r.next)
		r.next = ""
	}
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
	format                   []formatPiece // -f; nil: the fields above
}

func (p *printer) print(partition int32, r *floev1.Record) error {
	if p.json {
		return p.printJSON(partition, r)
	}
	if p.format != nil {
		return p.formatRecord(partition, r)
	}
	if p.offset {
		fmt.Fprintf(p.w, "%d%s%d%s", partition, p.sep, r.GetOffset(), p.sep)
	}
	if p.ts {
		p.w.WriteString(timestampText(r.GetTimestampMs()))
		p.w.WriteString(p.sep)
	}
	if p.key {
		p.w.Write(r.GetKey())
		p.w.WriteString(p.sep)
	}
	if p.headers {
		p.writeHeaders(r)
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

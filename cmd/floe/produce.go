package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/kbatch"
)

const produceAbout = `Produce each line of stdin (or of -file) as one record of TOPIC, or with
-whole all of it as one record. Records are batched by bytes
(-batch-bytes, one partition per request) and pipelined over one stream
(-in-flight requests unanswered at most). The producer is idempotent by
default: a request retried after a failure is never stored twice. With
-idempotent=false a request whose outcome is unknown (its connection broke
before the answer) stops the command, unless -at-least-once retries it
(it may then be stored twice).

Keys: with -key-separator each line is KEY SEP VALUE, and a keyed record
goes to the partition Kafka's partitioner picks for its key; a line
without the separator is an error. Records without a key go to one
partition per request, in turn. -partition sends everything to one
partition. Per line: -f reads a key, headers, a partition and the value
through a format ('%k %h %v', rpk's letters); -json reads each line as the
object floe consume -o json prints, so that its output produces back.

A bad line (over -max-record-bytes, or without the separator) stops the
command with its line number, once the lines before it are produced. A
request the agent refuses (a value against the topic's value.schema, say)
stops it too: nothing more is sent, the requests in flight are waited
for, and the error says at which line it stopped, which lines were
produced and which were not (with the default idempotent producer, the
requests after the refused one to its partition are not stored either).
At the end a summary goes to stderr (and, on a terminal, a progress line
meanwhile). With -v each record's line, partition and offset go to stdout.`

// produceFlags are the flags of `floe produce`.
type produceFlags struct {
	partition      partitionFlag
	keySep, key    string
	headers        kvFlag
	compression    string
	batchBytes     int
	batchRecords   int
	maxRecordBytes int
	inFlight       int
	idempotent     bool
	atLeastOnce    bool
	whole          bool
	affinity       bool
	file           string
	verbose        bool
	timeout        time.Duration
	format         []formatPiece // -f
	json           bool          // -json
}

func runProduce(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := newCommand("floe produce", "TOPIC", produceAbout, 1, 1)
	fs := cmd.fs
	addr := addrFlag(fs)
	f := produceFlags{partition: partitionFlag{p: -1, what: "by key"}, headers: kvFlag{}}
	fs.Var(&f.partition, "partition", "send every record to this partition (-1: by key; records without a key: one partition per request)")
	fs.StringVar(&f.keySep, "key-separator", "", "split each line into key and value at the first occurrence of this")
	fs.StringVar(&f.key, "key", "", "key of every record (with -whole: of the one record)")
	fs.Var(f.headers, "header", "header key=value added to every record (repeatable)")
	fs.StringVar(&f.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.IntVar(&f.batchBytes, "batch-bytes", 1<<20, "bytes per request at most, counting each record as the agent does (its bytes + 36, + 10 per header); a larger record goes alone; keep it under the agent's -max-request-bytes")
	fs.IntVar(&f.batchRecords, "batch", 10000, "records per request at most")
	fs.IntVar(&f.maxRecordBytes, "max-record-bytes", 1<<20, "largest record (key + value + headers); a larger line is an error; keep it at most the agent's -max-record-bytes")
	fs.IntVar(&f.inFlight, "in-flight", 8, "requests sent and not yet answered at most")
	fs.BoolVar(&f.idempotent, "idempotent", true, "number records so that a retry never duplicates (false: plain produce, a retry may duplicate)")
	fs.BoolVar(&f.atLeastOnce, "at-least-once", false, "with -idempotent=false: retry requests whose outcome is unknown (a broken connection), which may store them twice")
	fs.BoolVar(&f.affinity, "partition-affinity", false, "send each partition's records to the agent that prefers it (learned from -addr, refreshed every 5 s; -addr for the rest and when that agent fails) so that one agent writes each partition")
	fs.BoolVar(&f.whole, "whole", false, "send all of the input as one record")
	fs.StringVar(&f.file, "file", "", "read this file instead of stdin")
	fs.BoolVar(&f.verbose, "v", false, "print line, partition and offset of each record to stdout")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound of one request's answer; failed requests are retried up to 10 times")
	format := fs.String("f", "", produceFormatHelp)
	fs.BoolVar(&f.json, "json", false, `read each line as a JSON object, as consume -o json prints it: {"key":..., "value":..., "headers":[{"key":...,"value":...}] or {"k":"v"}, "partition":...} (base64 with "key_encoding"/"value_encoding")`)
	pos, err := cmd.parse(args, stdout)
	if err != nil {
		return err
	}
	if *format != "" {
		if f.format, err = parseProduceFormat(*format); err != nil {
			return err
		}
	}
	if n := btoi(*format != "") + btoi(f.json) + btoi(f.keySep != "") + btoi(f.whole); n > 1 {
		return errors.New("flags -f, -json, -key-separator and -whole exclude each other")
	}
	topic := pos[0]
	comp, err := kbatch.ParseCompression(f.compression)
	if err != nil {
		return fmt.Errorf("flag -compression: %w", err)
	}
	switch {
	case f.batchBytes <= 0:
		return fmt.Errorf("flag -batch-bytes: %d must be positive", f.batchBytes)
	case f.batchRecords <= 0:
		return fmt.Errorf("flag -batch: %d must be positive", f.batchRecords)
	case f.maxRecordBytes <= 0:
		return fmt.Errorf("flag -max-record-bytes: %d must be positive", f.maxRecordBytes)
	case f.inFlight <= 0:
		return fmt.Errorf("flag -in-flight: %d must be positive", f.inFlight)
	case f.timeout <= 0:
		return fmt.Errorf("flag -timeout: %v must be positive", f.timeout)
	}
	in := stdin
	if f.file != "" {
		file, err := os.Open(f.file)
		if err != nil {
			return fmt.Errorf("flag -file: %w", err)
		}
		defer file.Close()
		in = file
	}
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	dctx, cancel := context.WithTimeout(ctx, f.timeout)
	desc, err := c.Topics.DescribeTopic(dctx, &floev1.DescribeTopicRequest{Name: topic})
	cancel()
	if err != nil {
		return fmt.Errorf("produce to %q: %w", topic, err)
	}
	partitions := desc.GetTopic().GetPartitions()
	if f.partition.p >= partitions {
		return fmt.Errorf("flag -partition: topic %q has no partition %d (it has %d)", topic, f.partition.p, partitions)
	}

	st := newProduceStats(stderr)
	pr := &lineProducer{f: &f, partitions: partitions, stats: st, stdout: bufio.NewWriter(stdout),
		bufs: map[int32]*pendingBatch{}, sticky: rand.Int32N(partitions)}
	defer pr.stdout.Flush()
	for _, k := range slices.Sorted(maps.Keys(f.headers)) {
		pr.headers = append(pr.headers, &floev1.Header{Key: k, Value: []byte(f.headers[k])})
	}
	pr.p, err = c.NewProducer(ctx, topic, client.ProducerOptions{
		MaxInFlight: f.inFlight, Idempotent: f.idempotent, AtLeastOnce: f.atLeastOnce, Compression: floev1.Compression(comp),
		RequestTimeout: f.timeout, OnResult: pr.onResult, Batches: true, PartitionAffinity: f.affinity,
	})
	if err != nil {
		return fmt.Errorf("produce to %q: %w", topic, err)
	}
	defer pr.p.Close()
	if f.whole {
		err = pr.produceWhole(in)
	} else {
		err = pr.produceLines(ctx, in)
	}
	// After a bad line, the lines before it still go; after a failed
	// request, nothing more is sent, and the requests in flight are
	// waited for; after an interrupt, nothing more is sent.
	var be *client.BatchError
	if !errors.As(err, &be) && ctx.Err() == nil {
		if ferr := pr.flush(); ferr != nil && (err == nil || errors.As(ferr, &be)) {
			err = ferr
		}
	}
	st.stopProgress()
	var le *lineError
	switch {
	case err == nil:
	case errors.As(err, &be):
		return fmt.Errorf("produce to %q: %s", topic, pr.settle(be))
	case errors.As(err, &le):
		return fmt.Errorf("produce to %q: %s", topic, pr.stopped(le))
	case pr.stats.records > 0:
		return fmt.Errorf("produce to %q: %w (%d records before it were produced)", topic, err, pr.stats.records)
	default:
		return fmt.Errorf("produce to %q: %w", topic, err)
	}
	st.summary()
	return nil
}

// lineProducer turns input into batches, one partition per batch.
type lineProducer struct {
	f          *produceFlags
	partitions int32
	p          *client.Producer
	stats      *produceStats
	stdout     *bufio.Writer
	headers    []*floev1.Header
	bufs       map[int32]*pendingBatch // partition (-1: the agent's choice) -> batch being filled
	sticky     int32                   // partition of the next batch of records without a key
	lastRead   int                     // the last line read
	eof        bool                    // the input was read to its end
}

// pendingBatch is a batch being filled.
type pendingBatch struct {
	recs  []*floev1.Record
	lines []int // line number of each record
	bytes int   // as the agent counts them against its request limit
	data  int   // key, value and header bytes
}

// What a request's size counts per record and per header beside their
// bytes, as the agent counts them against its request limit.
const (
	recordOverhead = 36
	headerOverhead = 10
)

// batchTag identifies a sent batch in results and errors.
type batchTag struct {
	firstLine int
	lines     []int
	bytes     int
	data      int
}

// record builds the record of one line, and the partition the line names
// (-1: none), or says why the line is bad.
func (lp *lineProducer) record(line []byte) (*floev1.Record, int32, error) {
	in := lineInput{rec: &floev1.Record{Value: line}, partition: -1}
	var err error
	switch {
	case lp.f.json:
		in, err = fromJSON(line)
	case lp.f.format != nil:
		in, err = fromFormat(lp.f.format, line)
	case lp.f.keySep != "":
		k, v, ok := bytes.Cut(line, []byte(lp.f.keySep))
		if !ok {
			return nil, -1, fmt.Errorf("no key separator %q", lp.f.keySep)
		}
		in.rec.Key, in.rec.Value = k, v
	}
	if err != nil {
		return nil, -1, err
	}
	r := in.rec
	if r.Key == nil && lp.f.key != "" {
		r.Key = []byte(lp.f.key)
	}
	r.Headers = append(slices.Clip(lp.headers), r.Headers...)
	if in.partition >= lp.partitions {
		return nil, -1, fmt.Errorf("topic has no partition %d (it has %d)", in.partition, lp.partitions)
	}
	if size := recordBytes(r); size > lp.f.maxRecordBytes {
		return nil, -1, fmt.Errorf("record of %d bytes is over the limit of %d (-max-record-bytes)", size, lp.f.maxRecordBytes)
	}
	return r, in.partition, nil
}

// recordBytes is a record's key, value and header bytes.
func recordBytes(r *floev1.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// partitionOf is the partition a record's batch goes to; named is the one
// its line names (-1: none).
func (lp *lineProducer) partitionOf(r *floev1.Record, named int32) int32 {
	switch {
	case named >= 0:
		return named
	case lp.f.partition.p >= 0:
		return lp.f.partition.p
	case r.Key != nil && lp.f.idempotent:
		return client.PartitionForKey(r.Key, lp.partitions)
	case lp.f.idempotent:
		return lp.sticky
	default:
		return -1 // the agent partitions by key
	}
}

// add puts a record in its partition's batch, sending batches that are full.
func (lp *lineProducer) add(r *floev1.Record, named int32, lineNo int) error {
	p := lp.partitionOf(r, named)
	data := recordBytes(r)
	size := data + recordOverhead + headerOverhead*len(r.Headers)
	b := lp.bufs[p]
	if b != nil && (b.bytes+size > lp.f.batchBytes || len(b.recs) >= lp.f.batchRecords) {
		if err := lp.sendBatch(p); err != nil {
			return err
		}
		p = lp.partitionOf(r, named) // the sticky partition may have moved on
		b = lp.bufs[p]
	}
	if b == nil {
		b = &pendingBatch{}
		lp.bufs[p] = b
	}
	b.recs = append(b.recs, r)
	b.lines = append(b.lines, lineNo)
	b.bytes += size
	b.data += data
	return nil
}

func (lp *lineProducer) sendBatch(p int32) error {
	b := lp.bufs[p]
	if b == nil || len(b.recs) == 0 {
		return nil
	}
	delete(lp.bufs, p)
	if p == lp.sticky && lp.f.partition.p < 0 {
		lp.sticky = (lp.sticky + 1) % lp.partitions
	}
	lp.stats.sent(len(b.recs))
	return lp.p.Send(p, b.recs, batchTag{firstLine: b.lines[0], lines: b.lines, bytes: b.bytes, data: b.data})
}

// sendAll sends every partial batch.
func (lp *lineProducer) sendAll() error {
	for _, p := range slices.Sorted(maps.Keys(lp.bufs)) {
		if err := lp.sendBatch(p); err != nil {
			return err
		}
	}
	return nil
}

// flush sends every partial batch and waits for all answers.
func (lp *lineProducer) flush() error {
	if err := lp.sendAll(); err != nil {
		return err
	}
	return lp.p.Flush()
}

func (lp *lineProducer) onResult(tag any, resp *floev1.ProduceResponse) {
	t := tag.(batchTag)
	lp.stats.acked(len(t.lines), t.data, resp.GetPartitions())
	if lp.f.verbose {
		for i, line := range t.lines {
			fmt.Fprintf(lp.stdout, "%d\t%d\t%d\n", line, resp.GetPartitions()[i], resp.GetOffsets()[i])
		}
	}
}

// produceWhole sends all of in as one record.
func (lp *lineProducer) produceWhole(in io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(in, int64(lp.f.maxRecordBytes)+1))
	if err != nil {
		return fmt.Errorf("read input: %w", err)
	}
	lp.lastRead, lp.eof = 1, true
	r, p, err := lp.record(data)
	if err != nil {
		return &lineError{1, err}
	}
	return lp.add(r, p, 1)
}

// produceLines sends each line of in as a record. A pause in the input
// sends the partial batches, so that a slow writer's lines go out at once.
func (lp *lineProducer) produceLines(ctx context.Context, in io.Reader) error {
	lines := make(chan inputLine, 16) // at most 16 lines (of -max-record-bytes) read ahead
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The reader stops at the end of the input or once rctx ends; a read
	// blocked on stdin ends with the process.
	limit := lp.f.maxRecordBytes + len(lp.f.keySep)
	if lp.f.json || lp.f.format != nil {
		limit = 2*lp.f.maxRecordBytes + 64<<10 // quoting, base64 and separators take room
	}
	go readLines(rctx, in, limit, lp.f.maxRecordBytes, lines)
	for {
		var l inputLine
		var ok bool
		select {
		case l, ok = <-lines:
		default:
			// The input pauses: wait a little for more, then send what
			// is batched so that a slow writer's lines go out now.
			t := time.NewTimer(inputLinger)
			select {
			case l, ok = <-lines:
				t.Stop()
			case <-t.C:
				if err := lp.sendAll(); err != nil {
					return err
				}
				select {
				case l, ok = <-lines:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if !ok {
			lp.eof = true
			return nil
		}
		if l.err != nil {
			if errors.As(l.err, new(*lineError)) {
				lp.lastRead = l.n
			}
			return l.err
		}
		r, p, err := lp.record(l.data)
		if err != nil {
			lp.lastRead = l.n
			return &lineError{l.n, err}
		}
		if err := lp.add(r, p, l.n); err != nil {
			return err // l.n was not batched
		}
		lp.lastRead = l.n
	}
}

// inputLinger is how long a pause in the input may be before the partial
// batches are sent.
const inputLinger = 5 * time.Millisecond

// inputLine is a line of input (without its newline), or why reading failed.
type inputLine struct {
	n    int
	data []byte
	err  error
}

// readLines sends the lines of in, numbered from 1, then closes out. A
// line over limit bytes is an error (the line is not buffered), reported
// against the record limit recLimit.
func readLines(ctx context.Context, in io.Reader, limit, recLimit int, out chan<- inputLine) {
	defer close(out)
	br := bufio.NewReaderSize(in, 64<<10)
	emit := func(l inputLine) bool {
		select {
		case out <- l:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for n := 1; ; n++ {
		var line []byte
		over := false
		for {
			chunk, err := br.ReadSlice('\n')
			if !over {
				line = append(line, chunk...)
				if len(bytes.TrimSuffix(line, []byte("\n"))) > limit {
					over, line = true, nil
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				if over {
					emit(inputLine{n: n, err: &lineError{n, fmt.Errorf("longer than the record limit of %d bytes (-max-record-bytes)", recLimit)}})
				} else if len(line) > 0 {
					emit(inputLine{n: n, data: line})
				}
				return
			}
			if err != nil {
				emit(inputLine{n: n, err: fmt.Errorf("read input: %w", err)})
				return
			}
			break
		}
		if over {
			emit(inputLine{n: n, err: &lineError{n, fmt.Errorf("longer than the record limit of %d bytes (-max-record-bytes)", recLimit)}})
			return
		}
		if !emit(inputLine{n: n, data: bytes.TrimSuffix(line, []byte("\n"))}) {
			return
		}
	}
}

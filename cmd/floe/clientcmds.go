package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/kbatch"
)

func addrFlag(fs *flag.FlagSet) *string {
	return fs.String("addr", envOr("FLOE_ADDR", devGRPCAddr), "agent address (env FLOE_ADDR)")
}

func dial(addr string) (*client.Client, error) {
	return client.Dial(addr)
}

// kvFlag collects repeated key=value flags.
type kvFlag map[string]string

func (k kvFlag) String() string { return "" }
func (k kvFlag) Set(s string) error {
	key, val, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return fmt.Errorf("%q is not key=value", s)
	}
	k[key] = val
	return nil
}

func runTopic(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: floe topic create|list|describe|delete|alter|delete-records [flags] [NAME]")
		return errUsage
	}
	sub := args[0]
	if run, ok := topicRetentionCmds[sub]; ok {
		return run(ctx, args[1:], stdout, stderr)
	}
	switch sub {
	case "create", "list", "describe", "delete":
	default:
		return fmt.Errorf("topic: unknown subcommand %q (create, list, describe, delete, alter, delete-records)", sub)
	}
	fs := flag.NewFlagSet("floe topic "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := addrFlag(fs)
	partitions := fs.Int("partitions", 1, "partition count (create)")
	config := kvFlag{}
	fs.Var(config, "config", "topic config key=value (create, repeatable)")
	if err := fs.Parse(reorder(args[1:])); err != nil {
		return errUsage
	}
	name := fs.Arg(0)
	if sub != "list" && name == "" {
		return fmt.Errorf("topic %s: a topic name is required", sub)
	}
	c, err := dial(*addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch sub {
	case "create":
		t, err := c.CreateTopic(ctx, name, int32(*partitions), config)
		if err != nil {
			return fmt.Errorf("create topic %q: %w", name, err)
		}
		fmt.Fprintf(stdout, "created topic %s with %d partitions\n", t.GetName(), t.GetPartitions())
	case "list":
		resp, err := c.Topics.ListTopics(ctx, &floev1.ListTopicsRequest{})
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		for _, t := range resp.GetTopics() {
			fmt.Fprintf(stdout, "%s\t%d\n", t.GetName(), t.GetPartitions())
		}
	case "describe":
		resp, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: name})
		if err != nil {
			return fmt.Errorf("describe topic %q: %w", name, err)
		}
		t := resp.GetTopic()
		fmt.Fprintf(stdout, "topic %s (id %d), %d partitions\n", t.GetName(), t.GetId(), t.GetPartitions())
		keys := make([]string, 0, len(t.GetConfig()))
		for k := range t.GetConfig() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(stdout, "config %s=%s\n", k, t.GetConfig()[k])
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PARTITION\tLOG START\tHIGH WATERMARK")
		for _, p := range resp.GetPartitions() {
			fmt.Fprintf(tw, "%d\t%d\t%d\n", p.GetPartition(), p.GetLogStartOffset(), p.GetHighWatermark())
		}
		tw.Flush()
		printStorage(stdout, resp)
	case "delete":
		if _, err := c.Topics.DeleteTopic(ctx, &floev1.DeleteTopicRequest{Name: name}); err != nil {
			return fmt.Errorf("delete topic %q: %w", name, err)
		}
		fmt.Fprintf(stdout, "deleted topic %s\n", name)
	default:
		return fmt.Errorf("topic: unknown subcommand %q (create, list, describe, delete)", sub)
	}
	return nil
}

func runProduce(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("floe produce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := addrFlag(fs)
	partition := fs.Int("partition", -1, "partition (default: by key, or one partition per batch for null keys)")
	keySep := fs.String("key-separator", "", "split each line into key and value at the first occurrence of this")
	headers := kvFlag{}
	fs.Var(headers, "header", "header key=value added to every record (repeatable)")
	batch := fs.Int("batch", 500, "lines per produce request at most")
	compression := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	verbose := fs.Bool("v", false, "print partition and offset of each record")
	if err := fs.Parse(reorder(args)); err != nil {
		return errUsage
	}
	topic := fs.Arg(0)
	if topic == "" {
		return errors.New("produce: a topic name is required")
	}
	comp, err := kbatch.ParseCompression(*compression)
	if err != nil {
		return fmt.Errorf("flag -compression: %w", err)
	}
	if *batch <= 0 {
		return errors.New("flag -batch must be positive")
	}
	c, err := dial(*addr)
	if err != nil {
		return err
	}
	defer c.Close()

	lines := make(chan string, *batch)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		readErr <- sc.Err()
		close(lines)
	}()
	var hs []*floev1.Header
	for k, v := range headers {
		hs = append(hs, &floev1.Header{Key: k, Value: []byte(v)})
	}
	total := 0
	send := func(recs []*floev1.Record) error {
		req := &floev1.ProduceRequest{Topic: topic, Records: recs, Compression: floev1.Compression(comp)}
		if *partition >= 0 {
			p := int32(*partition)
			req.Partition = &p
		}
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		resp, err := c.Log.Produce(rctx, req)
		if err != nil {
			return fmt.Errorf("produce to %q: %w", topic, err)
		}
		total += len(recs)
		if *verbose {
			for i := range recs {
				fmt.Fprintf(stdout, "%d\t%d\n", resp.GetPartitions()[i], resp.GetOffsets()[i])
			}
		}
		return nil
	}
	for {
		line, ok := <-lines
		if !ok {
			break
		}
		recs := []*floev1.Record{toRecord(line, *keySep, hs)}
	fill:
		for len(recs) < *batch {
			select {
			case l, ok := <-lines:
				if !ok {
					break fill
				}
				recs = append(recs, toRecord(l, *keySep, hs))
			default:
				break fill
			}
		}
		if err := send(recs); err != nil {
			return err
		}
	}
	if err := <-readErr; err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	if *verbose {
		fmt.Fprintf(stderr, "produced %d records\n", total)
	}
	return nil
}

func toRecord(line, sep string, hs []*floev1.Header) *floev1.Record {
	r := &floev1.Record{Value: []byte(line), Headers: hs}
	if sep != "" {
		if k, v, ok := strings.Cut(line, sep); ok {
			r.Key, r.Value = []byte(k), []byte(v)
		}
	}
	return r
}

// reorder moves flags before positional arguments so that
// `floe produce TOPIC -v` works like `floe produce -v TOPIC`.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && !isBoolFlag(a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func isBoolFlag(a string) bool {
	switch strings.TrimLeft(a, "-") {
	case "v", "follow", "f", "print-key", "print-offset", "print-partition":
		return true
	}
	return false
}

// parseFrom turns -from into a start position.
func parseFrom(s string) (*floev1.StartPosition, error) {
	switch {
	case s == "earliest" || s == "beginning":
		return &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}, nil
	case s == "latest" || s == "end":
		return &floev1.StartPosition{Position: &floev1.StartPosition_Latest{Latest: true}}, nil
	case strings.HasPrefix(s, "@"):
		ts, err := parseTime(s[1:])
		if err != nil {
			return nil, err
		}
		return &floev1.StartPosition{Position: &floev1.StartPosition_TimestampMs{TimestampMs: ts}}, nil
	default:
		off, err := strconv.ParseInt(s, 10, 64)
		if err != nil || off < 0 {
			return nil, fmt.Errorf("flag -from: %q is not earliest, latest, an offset or @timestamp", s)
		}
		return &floev1.StartPosition{Position: &floev1.StartPosition_Offset{Offset: off}}, nil
	}
}

func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, fmt.Errorf("flag -from: %q is neither unix milliseconds nor RFC 3339", s)
	}
	return t.UnixMilli(), nil
}

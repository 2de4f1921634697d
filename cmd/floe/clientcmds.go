package main

import (
	"context"
	"errors"

	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata"
)

// dial connects to the first address; the connection is lazy.
func dial(addrs *addrList) (*client.Client, error) {
	if err := addrs.check(); err != nil {
		return nil, err
	}
	opts, err := addrs.dialOptions(addrs.addrs[0])
	if err != nil {
		return nil, err
	}
	return client.Dial(addrs.addrs[0], opts...)
}

// dialAll connects to every address, for commands that fail over.
func dialAll(addrs *addrList) ([]*client.Client, func(), error) {
	var cs []*client.Client
	closeAll := func() {
		for _, c := range cs {
			c.Close()
		}
	}
	if err := addrs.check(); err != nil {
		return nil, nil, err
	}
	for _, a := range addrs.addrs {
		opts, err := addrs.dialOptions(a)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		c, err := client.Dial(a, opts...)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cs = append(cs, c)
	}
	return cs, closeAll, nil
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

// topicCommands are the subcommands of `floe topic`.
var topicCommands = map[string]struct {
	args, about string
	nargs       int
}{
	"create":   {"NAME", "Create a topic: -partitions, its config (-config key=value), its value schema (-schema FILE)." + configKeysHelp, 1},
	"list":     {"", "List the topics and their partition counts.", 0},
	"describe": {"NAME", "Show a topic's configuration and each partition's log start offset and high watermark.", 1},
	"delete":   {"NAME", "Delete a topic; its records become unreadable.", 1},
}

const topicUsage = `usage: floe topic create|list|describe|delete|alter|delete-records [flags] [NAME]

Manage topics. Run 'floe topic SUBCOMMAND -h' for a subcommand's flags.
`

func runTopic(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("topic: a subcommand is required: create, list, describe, delete, alter or delete-records (see 'floe topic -h')")
	}
	sub := args[0]
	if run, ok := topicRetentionCmds[sub]; ok {
		return run(ctx, args[1:], stdout, stderr)
	}
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, topicUsage)
		return nil
	}
	spec, ok := topicCommands[sub]
	if !ok {
		return fmt.Errorf("topic: unknown subcommand %q: create, list, describe, delete, alter or delete-records (see 'floe topic -h')", sub)
	}
	cmd := newCommand("floe topic "+sub, spec.args, spec.about, spec.nargs, spec.nargs)
	fs := cmd.fs
	addr := addrFlag(fs)
	var partitions *int
	var valueSchema *string
	config := kvFlag{}
	output := new(string)
	if sub == "list" || sub == "describe" {
		output = outputFlag(fs)
	}
	if sub == "create" {
		partitions = fs.Int("partitions", 1, "partition count")
		fs.Var(config, "config", "topic config key=value, e.g. retention.ms=1h (repeatable; the keys are listed above)")
		valueSchema = schemaFlag(fs)
	}
	pos, err := cmd.parse(args[1:], stdout)
	if err != nil {
		return err
	}
	if *output != "" {
		if err := checkOutput(*output); err != nil {
			return err
		}
	}
	name := ""
	if len(pos) > 0 {
		name = pos[0]
	}
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch sub {
	case "create":
		if *partitions < 1 || *partitions > metadata.MaxPartitions {
			return fmt.Errorf("flag -partitions: %d is out of range: 1 to %d", *partitions, metadata.MaxPartitions)
		}
		if err := withValueSchema(config, *valueSchema); err != nil {
			return err
		}
		if err := metadata.ValidateTopicName(name); err != nil {
			return fmt.Errorf("topic create: %s", clean(strings.Replace(err.Error(), metadata.ErrInvalidTopicName.Error()+": ", "topic name ", 1)))
		}
		if err := checkTopicConfig(config, nil); err != nil {
			return fmt.Errorf("topic create: %w", err)
		}
		t, err := c.CreateTopic(ctx, name, int32(*partitions), config)
		if err != nil {
			return fmt.Errorf("create topic %q: %w", name, err)
		}
		fmt.Fprintf(stdout, "created topic %s with %d partitions\n", t.GetName(), t.GetPartitions())
	case "list":
		topics, err := c.ListTopics(ctx, 0) // every page
		if err != nil {
			return fmt.Errorf("list topics: %w", err)
		}
		if *output == "json" {
			return printProtoJSON(stdout, &floev1.ListTopicsResponse{Topics: topics})
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITIONS")
		for _, t := range topics {
			fmt.Fprintf(tw, "%s\t%d\n", t.GetName(), t.GetPartitions())
		}
		return tw.Flush()
	case "describe":
		resp, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: name})
		if err != nil {
			return fmt.Errorf("describe topic %q: %w", name, err)
		}
		if *output == "json" {
			return printProtoJSON(stdout, resp)
		}
		t := resp.GetTopic()
		fmt.Fprintf(stdout, "topic %s (id %d), %d partitions\n", t.GetName(), t.GetId(), t.GetPartitions())
		keys := make([]string, 0, len(t.GetConfig()))
		for k := range t.GetConfig() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		printTopicConfig(stdout, t.GetConfig(), keys)
		printRetentionWait(stdout, t.GetConfig())
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PARTITION\tLOG START\tHIGH WATERMARK")
		for _, p := range resp.GetPartitions() {
			fmt.Fprintf(tw, "%d\t%d\t%d\n", p.GetPartition(), p.GetLogStartOffset(), p.GetHighWatermark())
		}
		tw.Flush()
		printStorage(stdout, resp)
		printIceberg(stdout, resp)
	case "delete":
		if _, err := c.Topics.DeleteTopic(ctx, &floev1.DeleteTopicRequest{Name: name}); err != nil {
			return fmt.Errorf("delete topic %q: %w", name, err)
		}
		fmt.Fprintf(stdout, "deleted topic %s\n", name)
	}
	return nil
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

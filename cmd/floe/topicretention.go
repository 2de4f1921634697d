package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// topicRetentionCmds are the topic subcommands of retention.
var topicRetentionCmds = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"alter":          runTopicAlter,
	"delete-records": runTopicDeleteRecords,
}

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	if s == "" {
		return errors.New("empty value")
	}
	*l = append(*l, s)
	return nil
}

// The retention commands parse their own flags with the flag package and
// dial with the client package, so that they rely on no other helper of
// this command.

// retentionAddr is the -addr flag of a retention command.
func retentionAddr(fs *flag.FlagSet) *string {
	return fs.String("addr", envOr("FLOE_ADDR", devGRPCAddr), "agent address (env FLOE_ADDR)")
}

// flagsFirst moves the flags (and their values) before the positional
// arguments, so that flags may follow the topic name.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && i+1 < len(args) {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				continue
			}
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(append(flags, "--"), pos...)
}

// parseFlags parses a retention command's flags: -h prints the usage to
// help and reports done; an error is one line.
func parseFlags(fs *flag.FlagSet, args []string, help io.Writer) (pos []string, done bool, err error) {
	var usage strings.Builder
	fs.SetOutput(&usage)
	err = fs.Parse(flagsFirst(fs, args))
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(help, usage.String())
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w (see '%s -h')", strings.TrimPrefix(fs.Name(), "floe "), err, fs.Name())
	}
	return fs.Args(), false, nil
}

// parseTopicFlags parses a retention subcommand's flags and its one topic
// name. done is true after -h (usage printed, nothing to do).
func parseTopicFlags(fs *flag.FlagSet, args []string, help io.Writer) (name string, done bool, err error) {
	pos, done, err := parseFlags(fs, args, help)
	if done || err != nil {
		return "", done, err
	}
	switch len(pos) {
	case 0:
		return "", false, fmt.Errorf("%s: a topic name is required", strings.TrimPrefix(fs.Name(), "floe "))
	case 1:
		return pos[0], false, nil
	default:
		return "", false, fmt.Errorf("%s: unexpected arguments %q after the topic name", strings.TrimPrefix(fs.Name(), "floe "), pos[1:])
	}
}

// runTopicAlter is `floe topic alter NAME -set k=v -remove k`.
func runTopicAlter(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("floe topic alter", flag.ContinueOnError)
	addr := retentionAddr(fs)
	set := kvFlag{}
	fs.Var(set, "set", "config key=value to set, e.g. retention.ms=86400000 (repeatable)")
	var remove listFlag
	fs.Var(&remove, "remove", "config key to remove, back to its default (repeatable)")
	valueSchema := schemaFlag(fs)
	name, done, err := parseTopicFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if err := withValueSchema(set, *valueSchema); err != nil {
		return err
	}
	if len(set) == 0 && len(remove) == 0 {
		return errors.New("topic alter: nothing to change: give -set key=value, -remove key or -schema FILE")
	}
	c, err := client.Dial(*addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.Topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: name, Set: set, Remove: remove})
	if err != nil {
		return fmt.Errorf("alter topic %q: %w", name, err)
	}
	cfg := resp.GetTopic().GetConfig()
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(stdout, "altered topic %s\n", name)
	printTopicConfig(stdout, cfg, keys)
	return nil
}

// runTopicDeleteRecords is `floe topic delete-records NAME -partition P -offset O`.
func runTopicDeleteRecords(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("floe topic delete-records", flag.ContinueOnError)
	addr := retentionAddr(fs)
	partition := fs.Int("partition", -1, "partition (required)")
	offset := fs.Int64("offset", -2, "new log start offset: records below it are deleted; -1 deletes all (required)")
	name, done, err := parseTopicFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if *partition < 0 {
		return errors.New("topic delete-records: flag -partition is required (>= 0)")
	}
	if *offset < -1 {
		return errors.New("topic delete-records: flag -offset is required (>= 0, or -1 for all)")
	}
	c, err := client.Dial(*addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.Topics.DeleteRecords(ctx, &floev1.DeleteRecordsRequest{Topic: name, Partition: int32(*partition), Offset: *offset})
	if err != nil {
		return fmt.Errorf("delete records of %s/%d: %w", name, *partition, err)
	}
	fmt.Fprintf(stdout, "topic %s partition %d: log start %d, high watermark %d\n", name, *partition,
		resp.GetLogStartOffset(), resp.GetHighWatermark())
	return nil
}

// printStorage adds the storage figures to `floe topic describe`.
func printStorage(w io.Writer, resp *floev1.DescribeTopicResponse) {
	if st := resp.GetStorage(); st != nil {
		fmt.Fprintf(w, "storage: %d files, %d bytes; live %d bytes, dead %d bytes (not yet collected), %d batches\n",
			st.GetFiles(), st.GetFileBytes(), st.GetLiveBytes(), st.GetDeadBytes(), st.GetBatches())
	}
	if q := resp.GetDeletionQueue(); q != nil {
		fmt.Fprintf(w, "deletion queue (all topics): %d files, %d bytes, oldest %s\n",
			q.GetFiles(), q.GetBytes(), time.Duration(q.GetOldestAgeMs())*time.Millisecond)
	}
}

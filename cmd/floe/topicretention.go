package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// topicRetentionCmds are the topic subcommands of retention.
var topicRetentionCmds = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"alter":          runTopicAlter,
	"delete-records": runTopicDeleteRecords,
}

// runTopicAlter is `floe topic alter NAME -set k=v -remove k`.
func runTopicAlter(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("floe topic alter", "NAME", `Change a topic's configuration: -set key=value, -remove key (back to its
default), -schema FILE (its value schema).`+configKeysHelp, 1, 1)
	fs := cmd.fs
	addr := addrFlag(fs)
	set := kvFlag{}
	fs.Var(set, "set", "config key=value to set, e.g. retention.ms=1h (repeatable)")
	var remove listFlag
	fs.Var(&remove, "remove", "config key to remove, back to its default (repeatable)")
	valueSchema := schemaFlag(fs)
	pos, err := cmd.parse(args, stdout)
	if err != nil {
		return err
	}
	name := pos[0]
	if err := withValueSchema(set, *valueSchema); err != nil {
		return err
	}
	if len(set) == 0 && len(remove) == 0 {
		return errors.New("topic alter: nothing to change: give -set key=value, -remove key or -schema FILE")
	}
	if err := checkTopicConfig(set, remove); err != nil {
		return fmt.Errorf("topic alter: %w", err)
	}
	c, err := dial(addr)
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
	cmd := newCommand("floe topic delete-records", "NAME", `Move a partition's log start offset forward to -offset: the records below it
can no longer be read, and their files are deleted once nothing else needs them.`, 1, 1)
	fs := cmd.fs
	addr := addrFlag(fs)
	partition := fs.Int("partition", -1, "partition (required)")
	offset := fs.Int64("offset", -2, "new log start offset: records below it are deleted; -1 deletes all (required)")
	pos, err := cmd.parse(args, stdout)
	if err != nil {
		return err
	}
	name := pos[0]
	if *partition < 0 || *partition >= metadata.MaxPartitions {
		return fmt.Errorf("topic delete-records: flag -partition is required (0 to %d)", metadata.MaxPartitions-1)
	}
	if *offset < -1 {
		return errors.New("topic delete-records: flag -offset is required (>= 0, or -1 for all)")
	}
	c, err := dial(addr)
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

// configKeysHelp lists the topic config keys in a command's usage.
var configKeysHelp = func() string {
	var b strings.Builder
	b.WriteString("\n\nConfig keys (durations: milliseconds or a Go duration such as 1h, 90s,\n500ms; sizes: bytes; -1 where it says so):\n")
	for _, k := range metadata.TopicConfigKeys {
		fmt.Fprintf(&b, "  %-22s %s\n", k.Name, k.Help)
	}
	return strings.TrimSuffix(b.String(), "\n")
}()

// checkTopicConfig checks the keys and values a command sets before any
// request (the agent checks them again): unknown keys and values of the
// wrong form are refused with the known keys.
func checkTopicConfig(set map[string]string, remove []string) error {
	var err error
	if remove == nil {
		err = metadata.ValidateTopicConfig(set)
	} else {
		err = metadata.CheckConfigChange(set, remove)
	}
	if err != nil {
		return errors.New(clean(strings.Replace(err.Error(), metadata.ErrInvalidConfig.Error()+": ", "", 1)))
	}
	return nil
}

// printRetentionWait says, in topic describe, when time retention takes
// effect: it never passes what the topic's Iceberg table does not hold,
// and the table takes batches once they are iceberg.lag old, on the
// compactor's next pass.
func printRetentionWait(w io.Writer, cfg map[string]string) {
	if _, set := cfg[metadata.ConfigRetentionMs]; !set {
		return // the 7-day default: the wait is noise
	}
	r, err := metadata.ParseRetention(cfg)
	if err != nil || !r.Delete || r.Ms < 0 {
		return
	}
	ic, err := metadata.ParseIceberg(cfg)
	if err != nil || !ic.Enabled {
		return
	}
	keep := time.Duration(r.Ms) * time.Millisecond
	fmt.Fprintf(w, "retention: records older than %v go once the Iceberg table holds them: after about %v "+
		"(iceberg.lag %v, then the compactor's next pass), not %v\n", keep, keep+ic.Lag, ic.Lag, keep)
}

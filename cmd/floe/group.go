package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// groupCommands are the subcommands of `floe group`.
var groupCommands = map[string]struct {
	args, about string
	nargs       int
}{
	"list":     {"", "List the consumer groups: state and live members.", 0},
	"describe": {"GROUP", "Show a group's state, members, assignment, committed positions and lag.", 1},
	"reset": {"GROUP", `Move a group's committed positions: -to earliest, latest, @timestamp (unix ms or
RFC 3339: the first record at or after it) or an offset, or -shift N (from the
committed position, negative moves back), for the partitions of -topic (all
the group's positions when none is given), or only -partitions of one topic.
An offset outside the log is clamped to its start or end, and the plan says
so. Like kafka-consumer-groups, it only previews the plan unless -execute
is given. Refused while the group has live members unless -force; a group
that does not exist is NotFound (a reset never creates one).`, 1},
	"copy": {"FROM TO", `Copy every committed position of group FROM into group TO (which must have no
live members). Refused when TO already has positions, unless -force.`, 2},
	"delete": {"GROUP", "Delete a group without live members and its committed positions.", 1},
}

const groupUsage = `usage: floe group list|describe|reset|copy|delete [flags] [GROUP...]

Manage consumer groups. Run 'floe group SUBCOMMAND -h' for a subcommand's flags.
`

func runGroup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("group: a subcommand is required: list, describe, reset, copy or delete (see 'floe group -h')")
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, groupUsage)
		return nil
	}
	spec, ok := groupCommands[sub]
	if !ok {
		return fmt.Errorf("group: unknown subcommand %q: list, describe, reset, copy or delete (see 'floe group -h')", sub)
	}
	cmd := newCommand("floe group "+sub, spec.args, spec.about, spec.nargs, spec.nargs)
	fs := cmd.fs
	addr := addrFlag(fs)
	var (
		to, partitions *string
		topics         listFlag // comma-separated or repeated names
		shift          *int64
		force, execute *bool
	)
	output := new(string)
	if sub == "list" || sub == "describe" {
		output = outputFlag(fs)
	}
	if sub == "reset" {
		to = fs.String("to", "", "earliest, latest, @timestamp (unix ms or RFC 3339) or an offset")
		shift = fs.Int64("shift", 0, "move each position by N records (instead of -to)")
		fs.Var(&topics, "topic", "topic to reset (comma-separated or repeated; default: every position of the group)")
		partitions = fs.String("partitions", "", "comma-separated partitions of the one -topic (default: all)")
		force = fs.Bool("force", false, "reset even while the group has live members (they may overwrite it)")
		execute = fs.Bool("execute", false, "apply the plan (without it, the plan is only printed)")
		fs.Bool("dry-run", false, "print the plan only (the default; kept for scripts)")
	}
	if sub == "copy" {
		force = fs.Bool("force", false, "overwrite the positions TO already has")
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
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	g := c.Groups()
	switch sub {
	case "list":
		resp, err := g.ListGroups(ctx, &floev1.ListGroupsRequest{})
		if err != nil {
			return fmt.Errorf("list groups: %w", err)
		}
		if *output == "json" {
			return printProtoJSON(stdout, resp)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tSTATE\tMEMBERS")
		for _, l := range resp.GetGroups() {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", l.GetGroup(), l.GetState(), l.GetMembers())
		}
		return tw.Flush()
	case "describe":
		resp, err := g.DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: pos[0]})
		if err != nil {
			return fmt.Errorf("describe group %q: %w", pos[0], err)
		}
		if *output == "json" {
			return printProtoJSON(stdout, resp)
		}
		return printGroup(stdout, resp)
	case "reset":
		req := &floev1.ResetOffsetsRequest{Group: pos[0], Topics: topics, Force: *force, DryRun: !*execute}
		if err := resetSpec(req, *to, *shift, fs); err != nil {
			return err
		}
		if *partitions != "" {
			if len(topics) != 1 {
				return errors.New("group reset: -partitions needs exactly one -topic")
			}
			for _, s := range strings.Split(*partitions, ",") {
				p, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
				if err != nil || p < 0 {
					return fmt.Errorf("flag -partitions: %q is not a partition number", s)
				}
				req.Partitions = append(req.Partitions, &floev1.TopicPartition{Topic: topics[0], Partition: int32(p)})
			}
			req.Topics = nil
		}
		resp, err := g.ResetOffsets(ctx, req)
		if err != nil {
			return fmt.Errorf("reset group %q: %w", pos[0], err)
		}
		return printResetPlan(stdout, pos[0], req, resp.GetPlan(), *execute)
	case "copy":
		if !*force {
			have, err := g.FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: pos[1]})
			if err != nil {
				return fmt.Errorf("copy group %q to %q: %w", pos[0], pos[1], err)
			}
			if n := len(have.GetOffsets()); n > 0 {
				return fmt.Errorf("group copy: group %q already has %d committed positions; -force overwrites them", pos[1], n)
			}
		}
		resp, err := g.CopyOffsets(ctx, &floev1.CopyOffsetsRequest{From: pos[0], To: pos[1]})
		if err != nil {
			return fmt.Errorf("copy group %q to %q: %w", pos[0], pos[1], err)
		}
		fmt.Fprintf(stdout, "copied %d positions from group %s to group %s\n", resp.GetCopied(), pos[0], pos[1])
	case "delete":
		if _, err := g.DeleteGroup(ctx, &floev1.DeleteGroupRequest{Group: pos[0]}); err != nil {
			return fmt.Errorf("delete group %q: %w", pos[0], err)
		}
		fmt.Fprintf(stdout, "deleted group %s\n", pos[0])
	}
	return nil
}

// printResetPlan prints a reset's plan: each position, whether it moves,
// and whether the asked offset was clamped to the log; then what changed.
func printResetPlan(w io.Writer, group string, req *floev1.ResetOffsetsRequest, plan []*floev1.OffsetResetPlan, executed bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tPREVIOUS\tNEW\tNOTE")
	moved := 0
	for _, r := range plan {
		prev := "-"
		if r.GetPrevious() >= 0 {
			prev = strconv.FormatInt(r.GetPrevious(), 10)
		}
		var notes []string
		if asked, ok := askedOffset(req, r.GetPrevious()); ok && asked != r.GetNew() {
			end := "end"
			if asked < r.GetNew() {
				end = "start"
			}
			notes = append(notes, fmt.Sprintf("clamped to the log %s (asked %d)", end, asked))
		}
		if r.GetPrevious() == r.GetNew() {
			notes = append(notes, "unchanged")
		} else {
			moved++
		}
		note := "-"
		if len(notes) > 0 {
			note = strings.Join(notes, "; ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", r.GetTopic(), r.GetPartition(), prev, r.GetNew(), note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !executed {
		_, err := fmt.Fprintf(w, "preview: %d of %d positions would move; nothing changed (run again with -execute to apply)\n", moved, len(plan))
		return err
	}
	_, err := fmt.Fprintf(w, "moved %d %s of group %s (%d unchanged)\n", moved, plural(moved, "position", "positions"), group, len(plan)-moved)
	return err
}

// askedOffset is the offset a reset asked for a partition before clamping
// (known for -to OFFSET, and for -shift from a committed position).
func askedOffset(req *floev1.ResetOffsetsRequest, previous int64) (int64, bool) {
	switch req.GetSpec() {
	case floev1.ResetSpec_RESET_SPEC_OFFSET:
		return req.GetOffset(), true
	case floev1.ResetSpec_RESET_SPEC_SHIFT:
		return previous + req.GetShift(), previous >= 0
	}
	return 0, false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// resetSpec fills req's spec from -to or -shift (exactly one).
func resetSpec(req *floev1.ResetOffsetsRequest, to string, shift int64, fs *flag.FlagSet) error {
	shiftSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "shift" {
			shiftSet = true
		}
	})
	switch {
	case to == "" && !shiftSet:
		return errors.New("group reset: one of -to or -shift is required")
	case to != "" && shiftSet:
		return errors.New("group reset: -to and -shift exclude each other")
	case shiftSet:
		req.Spec, req.Shift = floev1.ResetSpec_RESET_SPEC_SHIFT, shift
		return nil
	}
	switch {
	case to == "earliest" || to == "beginning":
		req.Spec = floev1.ResetSpec_RESET_SPEC_EARLIEST
	case to == "latest" || to == "end":
		req.Spec = floev1.ResetSpec_RESET_SPEC_LATEST
	case strings.HasPrefix(to, "@"):
		ts, err := parseTime(to[1:])
		if err != nil {
			return fmt.Errorf("flag -to: %w", err)
		}
		req.Spec, req.TimestampMs = floev1.ResetSpec_RESET_SPEC_TIMESTAMP, ts
	default:
		off, err := strconv.ParseInt(to, 10, 64)
		if err != nil || off < 0 {
			return fmt.Errorf("flag -to: %q is not earliest, latest, @timestamp or an offset", to)
		}
		req.Spec, req.Offset = floev1.ResetSpec_RESET_SPEC_OFFSET, off
	}
	return nil
}

// printGroup prints a DescribeGroup answer.
func printGroup(w io.Writer, d *floev1.DescribeGroupResponse) error {
	fmt.Fprintf(w, "group %s: %s, epoch %d, %d members\n", d.GetGroup(), d.GetState(), d.GetGroupEpoch(), len(d.GetMembers()))
	if d.GetLastRebalanceMs() > 0 {
		fmt.Fprintf(w, "last rebalance %s, took %v\n", fmtMs(d.GetLastRebalanceMs()),
			time.Duration(d.GetLastRebalanceDurationMs())*time.Millisecond)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(d.GetMembers()) > 0 {
		fmt.Fprintln(tw, "MEMBER\tEPOCH\tASSIGNED\tREVOKING\tTARGET\tLAST HEARTBEAT")
		for _, m := range d.GetMembers() {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", m.GetMemberId(), m.GetMemberEpoch(), fmtTPs(m.GetAssigned()),
				fmtTPs(m.GetRevoking()), fmtTPs(m.GetTarget()), fmtMs(m.GetLastHeartbeatMs()))
		}
		tw.Flush()
	}
	return printLag(w, "", d.GetPartitions())
}

// printLag prints partitions' lag in at most 100 columns (the event
// timestamp of the oldest unconsumed record and full owner ids are in
// -o json); group, when not empty, heads the table.
func printLag(w io.Writer, group string, ps []*floev1.PartitionLag) error {
	if group != "" {
		fmt.Fprintf(w, "group %s\n", group)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPART\tCOMMITTED\tEND\tLAG\tLAG BYTES\tLAG AGE\tRATE/S\tRETENTION IN\tOWNER")
	for _, p := range ps {
		left := "never"
		if t := p.GetTimeToRetentionMs(); t >= 0 {
			left = (time.Duration(t) * time.Millisecond).Round(time.Second).String()
		}
		owner := p.GetOwner()
		if owner == "" {
			owner = "-"
		} else if len(owner) > 14 {
			owner = owner[:13] + "…"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%v\t%.1f\t%s\t%s\n", p.GetTopic(), p.GetPartition(), p.GetCommitted(),
			p.GetHighWatermark(), p.GetLagRecords(), humanBytes(p.GetLagBytes()),
			(time.Duration(p.GetLagMs()) * time.Millisecond).Round(time.Second), p.GetConsumeRate(), left, owner)
	}
	return tw.Flush()
}

func fmtTPs(ps []*floev1.TopicPartition) string {
	if len(ps) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s/%d", p.GetTopic(), p.GetPartition())
	}
	return b.String()
}

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

const lagAbout = `Print the lag of GROUP (or of every group) per partition: committed
position, end (high watermark), lag in records and bytes, the age by
append time of the oldest unconsumed record, the consume rate (measured
by the agent between calls: run it twice), the time left until retention
reaches the committed position at the current rates, and the owner. With
-o json, one object per group, which also holds the oldest unconsumed
record's event timestamp.`

func runLag(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("floe lag", "[GROUP]", lagAbout, 0, 1)
	addr := addrFlag(cmd.fs)
	output := outputFlag(cmd.fs)
	pos, err := cmd.parse(args, stdout)
	if err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	groups := pos
	if len(groups) == 0 {
		resp, err := c.Groups().ListGroups(ctx, &floev1.ListGroupsRequest{})
		if err != nil {
			return fmt.Errorf("list groups: %w", err)
		}
		for _, g := range resp.GetGroups() {
			groups = append(groups, g.GetGroup())
		}
	}
	for i, g := range groups {
		d, err := c.Groups().DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: g})
		if err != nil {
			return fmt.Errorf("lag of group %q: %w", g, err)
		}
		if *output == "json" {
			if err := printProtoJSON(stdout, &floev1.DescribeGroupResponse{Group: g, Partitions: d.GetPartitions()}); err != nil {
				return err
			}
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := printLag(stdout, g, d.GetPartitions()); err != nil {
			return err
		}
	}
	return nil
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// errHelp means a command printed its usage on request: exit 0.
var errHelp = errors.New("help printed")

// command is one command's flags and usage.
type command struct {
	name  string // "floe consume"
	args  string // positional arguments, as shown: "TOPIC"
	about string // what it does, one short paragraph
	fs    *flag.FlagSet
	min   int // positional arguments required
	max   int // positional arguments accepted
}

func newCommand(name, args, about string, min, max int) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned in one line; -h prints via usage
	return &command{name: name, args: args, about: about, fs: fs, min: min, max: max}
}

// short is the name without "floe ", for messages that main prefixes.
func (c *command) short() string { return strings.TrimPrefix(c.name, "floe ") }

// usage writes the command's own usage to w.
func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s", c.name)
	if c.args != "" {
		fmt.Fprintf(w, " %s", c.args)
	}
	fmt.Fprintf(w, " [flags]\n\n%s\n", c.about)
	n := 0
	c.fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nflags:\n")
		c.fs.SetOutput(w)
		c.fs.PrintDefaults()
		c.fs.SetOutput(io.Discard)
	}
}

// parse parses args, flags and positional arguments in any order ("--"
// ends the flags), and returns the positional arguments. -h, -help and
// --help print the usage to stdout and return errHelp.
func (c *command) parse(args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		err := c.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.usage(stdout)
			return nil, errHelp
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v (see '%s -h')", c.short(), err, c.name)
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			break
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < c.min:
		return nil, fmt.Errorf("%s: missing argument %s (see '%s -h')", c.short(), c.args, c.name)
	case len(pos) > c.max:
		return nil, fmt.Errorf("%s: unexpected argument %q (see '%s -h')", c.short(), pos[c.max], c.name)
	}
	return pos, nil
}

// partitionFlag is a partition number, or -1 for its documented default
// (by key, or all partitions). Other negatives and values past int32 are
// refused, never truncated.
type partitionFlag struct {
	p    int32
	what string // what -1 means
}

func (f *partitionFlag) String() string {
	if f == nil {
		return "-1"
	}
	return strconv.Itoa(int(f.p))
}

func (f *partitionFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	if v < -1 || v > math.MaxInt32 {
		return fmt.Errorf("%d is out of range: 0 to %d, or -1 for %s", v, math.MaxInt32, f.what)
	}
	f.p = int32(v)
	return nil
}

// addrList is -addr: agent addresses, comma-separated or repeated.
type addrList struct {
	addrs []string
	set   bool // set from the command line: replaces the default
}

func (a *addrList) String() string {
	if a == nil {
		return ""
	}
	return strings.Join(a.addrs, ",")
}

func (a *addrList) Set(s string) error {
	if !a.set {
		a.addrs, a.set = nil, true
	}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return fmt.Errorf("%q: empty address", s)
		}
		a.addrs = append(a.addrs, p)
	}
	return nil
}

func addrFlag(fs *flag.FlagSet) *addrList {
	a := &addrList{}
	if err := a.Set(envOr("FLOE_ADDR", devGRPCAddr)); err != nil {
		a.addrs = []string{devGRPCAddr}
	}
	a.set = false
	fs.Var(a, "addr", "agent address host:port; several, comma-separated or repeated, for failover (env FLOE_ADDR)")
	return a
}

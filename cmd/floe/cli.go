package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
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
	addrs  []string
	set    bool        // set from the command line: replaces the default
	envErr error       // FLOE_ADDR is not an address list (reported unless -addr is set)
	tls    clientTLS   // -tls, -ca, -cert, -key (tlsclient.go)
	token  clientToken // -token, -token-file (tokenclient.go)
}

// check reports a bad FLOE_ADDR that -addr did not replace.
func (a *addrList) check() error {
	if a.envErr != nil && !a.set {
		return fmt.Errorf("environment FLOE_ADDR: %v", a.envErr)
	}
	return nil
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
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if parts[i] = strings.TrimSpace(p); parts[i] == "" {
			return fmt.Errorf("%q: empty address", s)
		}
	}
	for _, p := range parts {
		if err := checkAddr(p); err != nil {
			return err
		}
		a.addrs = append(a.addrs, p)
	}
	return nil
}

// listFlag collects a repeated flag whose values may also be
// comma-separated (topic names, config keys, partitions).
type listFlag []string

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			return fmt.Errorf("%q: empty value", s)
		}
		*l = append(*l, p)
	}
	return nil
}

// checkAddr checks an agent address: host:port, the port a number.
func checkAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return fmt.Errorf("%q is not host:port (such as %s)", a, devGRPCAddr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 1 to 65535", a, port)
	}
	return nil
}

func addrFlag(fs *flag.FlagSet) *addrList {
	a := &addrList{}
	if err := a.Set(envOr("FLOE_ADDR", devGRPCAddr)); err != nil {
		a.addrs, a.envErr = []string{devGRPCAddr}, err
	}
	a.set = false
	fs.Var(a, "addr", "agent address host:port; several, comma-separated or repeated, for failover (env FLOE_ADDR)")
	a.tls.register(fs)
	a.token.register(fs)
	return a
}

// outputFlag adds -o (text or json) to an admin command.
func outputFlag(fs *flag.FlagSet) *string {
	return fs.String("o", "text", "output format: text (tables with headers) or json (the answer as one JSON object)")
}

// checkOutput checks -o.
func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return fmt.Errorf("flag -o: %q is neither text nor json", o)
	}
	return nil
}

// printProtoJSON writes an answer as one line of JSON (protojson's
// field names, zero values included).
func printProtoJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{EmitUnpopulated: true, UseProtoNames: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// subSpec is one subcommand of token, user or acl.
type subSpec struct {
	args, about string
	nargs       int
}

// subcommand picks the subcommand of args for top ("token") among order
// (the names of subs, in the order usage shows them). On -h it prints
// usage and returns errHelp.
func subcommand(top, usage string, subs map[string]subSpec, order []string, args []string, stdout io.Writer) (string, *command, error) {
	names := strings.Join(order, ", ")
	if len(args) == 0 {
		return "", nil, fmt.Errorf("%s: a subcommand is required: %s (see 'floe %s -h')", top, names, top)
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return "", nil, errHelp
	}
	spec, ok := subs[sub]
	if !ok {
		return "", nil, fmt.Errorf("%s: unknown subcommand %q: %s (see 'floe %s -h')", top, sub, names, top)
	}
	return sub, newCommand("floe "+top+" "+sub, spec.args, spec.about, spec.nargs, spec.nargs), nil
}

// errRequired is a missing required flag.
func errRequired(cmd *command, flag string) error {
	return errors.New(cmd.short() + ": flag -" + flag + " is required (see '" + cmd.name + " -h')")
}

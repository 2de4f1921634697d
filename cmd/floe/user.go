package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
)

var userCommands = map[string]subSpec{
	"create": {"NAME", `Create or replace the SCRAM credential of user NAME for -mechanism, from the
password on the first line of -password-file (or of stdin, with "-" or
without the flag). The agent derives the salted keys; the password is never
stored. Use TLS to the agent: the password crosses the connection.`, 1},
	"list":   {"", "List the users: name, SCRAM mechanism and iterations.", 0},
	"delete": {"NAME", "Delete user NAME's credential for -mechanism (default: every mechanism).", 1},
}

const userUsage = `usage: floe user create|list|delete [flags] [NAME]

Manage SCRAM users (Kafka SASL/SCRAM). Run 'floe user SUBCOMMAND -h' for a subcommand's flags.
`

// maxPasswordLine bounds the password line read.
const maxPasswordLine = 1024

func runUser(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	sub, cmd, err := subcommand("user", userUsage, userCommands, []string{"create", "list", "delete"}, args, stdout)
	if err != nil {
		return err
	}
	fs := cmd.fs
	addr := addrFlag(fs)
	var mechanism, passwordFile *string
	var iterations *int
	output := new(string)
	switch sub {
	case "create":
		mechanism = fs.String("mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
		passwordFile = fs.String("password-file", "-", `file whose first line is the password ("-": stdin)`)
		iterations = fs.Int("iterations", 0, fmt.Sprintf("PBKDF2 iterations, %d to %d (0: the agent's default, %d)",
			auth.MinScramIterations, auth.MaxScramIterations, auth.DefaultScramIterations))
	case "delete":
		mechanism = fs.String("mechanism", "", "SCRAM-SHA-256 or SCRAM-SHA-512 (default: every mechanism)")
	case "list":
		output = outputFlag(fs)
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
	mech := floev1.ScramMechanism_SCRAM_MECHANISM_UNSPECIFIED
	if mechanism != nil && *mechanism != "" {
		m, err := auth.ParseScramMechanism(*mechanism)
		if err != nil {
			return fmt.Errorf("%s: flag -mechanism: %q is not SCRAM-SHA-256 or SCRAM-SHA-512", cmd.short(), *mechanism)
		}
		mech = floev1.ScramMechanism(m)
	}
	var password string
	if sub == "create" {
		if *iterations != 0 && (*iterations < auth.MinScramIterations || *iterations > auth.MaxScramIterations) {
			return fmt.Errorf("user create: flag -iterations: %d is out of range: %d to %d (0: the agent's default)",
				*iterations, auth.MinScramIterations, auth.MaxScramIterations)
		}
		if password, err = readPassword(*passwordFile, stdin); err != nil {
			return fmt.Errorf("user create: %w", err)
		}
	}
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a := c.Admin()
	switch sub {
	case "create":
		req := &floev1.UpsertUserRequest{Name: pos[0], Mechanism: mech, Password: password, Iterations: int32(*iterations)}
		if _, err := a.UpsertUser(ctx, req); err != nil {
			return fmt.Errorf("create user %q: %w", pos[0], err)
		}
		fmt.Fprintf(stdout, "set the %s credential of user %s\n", *mechanism, pos[0])
	case "list":
		resp, err := a.ListUsers(ctx, &floev1.ListUsersRequest{})
		if err != nil {
			return fmt.Errorf("list users: %w", err)
		}
		if *output == "json" {
			return printProtoJSON(stdout, resp)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tMECHANISM\tITERATIONS")
		for _, u := range resp.GetUsers() {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", u.GetName(), auth.ScramMechanism(u.GetMechanism()), u.GetIterations())
		}
		return tw.Flush()
	case "delete":
		resp, err := a.DeleteUser(ctx, &floev1.DeleteUserRequest{Name: pos[0], Mechanism: mech})
		if err != nil {
			return fmt.Errorf("delete user %q: %w", pos[0], err)
		}
		fmt.Fprintf(stdout, "deleted %d credential(s) of user %s\n", resp.GetDeleted(), pos[0])
	}
	return nil
}

// readPassword reads the first line of path ("-": stdin), without its line
// ending; an empty one is an error.
func readPassword(path string, stdin io.Reader) (string, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("flag -password-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(io.LimitReader(r, maxPasswordLine+2)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if len(line) > maxPasswordLine {
		return "", fmt.Errorf("the password is over %d bytes", maxPasswordLine)
	}
	if line == "" {
		return "", errors.New("the password is empty (give it on the first line of -password-file or of stdin)")
	}
	return line, nil
}

// Command floe is floe's one binary: the agent (`floe agent`), everything
// in one process on local defaults (`floe dev`), and client subcommands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"google.golang.org/grpc/status"
)

const usage = `floe — a diskless log broker

usage:
  floe dev      [flags]                 run an agent on a local directory and SQLite
  floe agent    [flags]                 run an agent against PostgreSQL and S3
  floe compactor [flags]                run retention, file deletion, orphan collection and merging
  floe config   print [agent|dev|compactor] [flags]   print the effective configuration
  floe topic    create|list|describe|delete|alter|delete-records [flags] [NAME]
  floe produce  TOPIC [flags]           produce lines of stdin (or a file) as records
  floe consume  TOPIC [flags]           print records (-group G: as a consumer group member)
  floe group    list|describe|reset|copy|delete [flags] [GROUP]
  floe lag      [GROUP] [flags]         print consumer group lag
  floe table    describe|scan TOPIC [flags]   look at a topic's Iceberg table
  floe token    create|list|revoke [flags] [ID]   manage bearer tokens
  floe user     create|list|delete [flags] [NAME] manage SCRAM users
  floe acl      add|list|remove [flags]     manage ACLs
  floe version                          print the version, commit and Go version

Run 'floe COMMAND -h' for a command's arguments and flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "floe: "+explain(err, addrOf(os.Args[1:], os.Getenv)))
		os.Exit(1)
	}
}

// run runs the command of args. A nil error exits 0; any other is printed
// in one line and exits 1.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, stdin, stdout, stderr)
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("a command is required (run 'floe -h' for the list)")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "dev":
		return runDev(ctx, rest, stdout, stderr)
	case "agent":
		return runAgent(ctx, rest, stdout, stderr)
	case "compactor":
		return runCompactor(ctx, rest, stdout, stderr)
	case "config":
		return runConfig(ctx, rest, stdout, stderr) // config_print.go
	case "topic":
		return runTopic(ctx, rest, stdout, stderr)
	case "produce":
		return runProduce(ctx, rest, stdin, stdout, stderr)
	case "consume":
		return runConsume(ctx, rest, stdout, stderr)
	case "group":
		return runGroup(ctx, rest, stdout, stderr) // group.go
	case "lag":
		return runLag(ctx, rest, stdout, stderr)
	case "table":
		return runTable(ctx, rest, stdout, stderr) // table.go
	case "token":
		return runToken(ctx, rest, stdout, stderr) // token.go
	case "user":
		return runUser(ctx, rest, stdin, stdout, stderr) // user.go
	case "acl":
		return runACL(ctx, rest, stdout, stderr) // acl.go
	case "version", "--version", "-version":
		c := newCommand("floe version", "", "Print the version, commit and Go version of this binary.", 0, 0)
		if _, err := c.parse(rest, stdout); err != nil {
			return err
		}
		fmt.Fprintln(stdout, versionString())
		return nil
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		return fmt.Errorf("unknown command %q (run 'floe -h' for the list)", cmd)
	}
}

// oneLine renders err on one line, a gRPC status in it as "Code: message".
func oneLine(err error) string {
	msg := err.Error()
	var se interface {
		error
		GRPCStatus() *status.Status
	}
	if errors.As(err, &se) {
		st := se.GRPCStatus()
		msg = strings.Replace(msg, se.Error(), st.Code().String()+": "+st.Message(), 1)
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " ")
}

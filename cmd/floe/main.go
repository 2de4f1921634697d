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
  floe dev      [flags]   run agent on a local directory and SQLite (embedded default)
  floe agent    [flags]   run an agent against PostgreSQL and S3
  floe compactor [flags]  run retention, file deletion and orphan collection (PostgreSQL and S3)
  floe topic    create|list|describe|delete|alter|delete-records ...
  floe produce  TOPIC [flags]   produce lines from stdin
  floe consume  TOPIC [flags]   print records
  floe version

Run 'floe COMMAND -h' for a command's flags.
`

var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "floe: "+oneLine(err))
		}
		os.Exit(1)
	}
}

// errUsage means the usage text was already printed.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "dev":
		return runDev(ctx, rest, stderr)
	case "agent":
		return runAgent(ctx, rest, stderr)
	case "compactor":
		return runCompactor(ctx, rest, stderr)
	case "topic":
		return runTopic(ctx, rest, stdout, stderr)
	case "produce":
		return runProduce(ctx, rest, stdin, stdout, stderr)
	case "consume":
		return runConsume(ctx, rest, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "floe", version)
		return nil
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "floe: unknown command %q\n\n%s", cmd, usage)
		return errUsage
	}
}

// oneLine renders err on one line; gRPC errors as "code: message".
func oneLine(err error) string {
	msg := err.Error()
	if st, ok := status.FromError(errors.Unwrap(err)); ok && st.Message() != "" {
		msg = strings.TrimSuffix(msg, st.Err().Error()) + st.Code().String() + ": " + st.Message()
	} else if st, ok := status.FromError(err); ok {
		msg = st.Code().String() + ": " + st.Message()
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " ")
}

// Command floe-probe is the health check of floe's containers, whose image
// has no shell, curl or wget: it GETs one URL and exits 0 if the answer is
// 2xx within the timeout, 1 otherwise (with one line on stderr).
//
//	floe-probe [-timeout 2s] http://127.0.0.1:7071/readyz
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "floe-probe:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("floe-probe", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 2*time.Second, "bound of the request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: floe-probe [-timeout D] URL")
	}
	return probe(fs.Arg(0), *timeout)
}

func probe(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return nil
}

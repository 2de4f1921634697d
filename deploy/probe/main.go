// Command floe-probe is the health check of floe's containers, whose image
// has no shell, curl or wget: it GETs one URL and exits 0 if the answer is
// 2xx within the timeout, 1 otherwise (with one line on stderr). With
// -sleep it only waits that long and exits 0: the Helm chart's preStop hook
// (an exec hook, which any Kubernetes version runs, unlike the sleep
// action of 1.30).
//
// Over HTTPS it checks the server's certificate against -ca (default: the
// system's roots), or not at all with -insecure (a probe of the container's
// own 127.0.0.1, whose certificate names the Service).
//
//	floe-probe [-timeout 2s] http://127.0.0.1:7071/readyz
//	floe-probe -insecure https://127.0.0.1:7071/readyz
//	floe-probe -ca /etc/floe/tls/http/ca.crt https://floe-agent-http:7071/readyz
//	floe-probe -sleep 10s
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if err := run(os.Args[1:], time.Sleep); err != nil {
		fmt.Fprintln(os.Stderr, "floe-probe:", err)
		os.Exit(1)
	}
}

const usage = "usage: floe-probe [-timeout D] [-ca FILE | -insecure] URL | floe-probe -sleep D"

// run is the command on args; sleep waits (time.Sleep but in tests).
func run(args []string, sleep func(time.Duration)) error {
	fs := flag.NewFlagSet("floe-probe", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 2*time.Second, "bound of the request")
	wait := fs.Duration("sleep", 0, "wait this long and exit 0, asking nothing (a preStop hook)")
	ca := fs.String("ca", "", "PEM file of the CAs of an https:// server's certificate (default: the system's)")
	insecure := fs.Bool("insecure", false, "https://: do not check the server's certificate (a probe of the container's own address)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *wait < 0:
		return fmt.Errorf("-sleep %v: must not be negative", *wait)
	case *wait > 0 && fs.NArg() == 0:
		sleep(*wait)
		return nil
	case *wait > 0 || fs.NArg() != 1:
		return fmt.Errorf("%s", usage)
	}
	tc, err := tlsConfig(*ca, *insecure)
	if err != nil {
		return err
	}
	return probeWith(fs.Arg(0), *timeout, &http.Client{Transport: &http.Transport{TLSClientConfig: tc}})
}

// tlsConfig is the probe's TLS: roots from caFile, or no check.
func tlsConfig(caFile string, insecure bool) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // -insecure asks for it
	if caFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("-ca: %w", err)
	}
	tc.RootCAs = x509.NewCertPool()
	if !tc.RootCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-ca %s: no PEM certificate in it", caFile)
	}
	return tc, nil
}

func probe(url string, timeout time.Duration) error {
	return probeWith(url, timeout, http.DefaultClient)
}

func probeWith(url string, timeout time.Duration, hc *http.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	resp, err := hc.Do(req)
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

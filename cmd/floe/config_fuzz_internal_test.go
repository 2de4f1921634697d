package main

import (
	"bytes"
	"testing"
)

// FuzzDecodeConfig: a configuration file of any bytes decodes without a
// panic, to an error or to settings that print (floe config) to a file
// that decodes to the same settings again.
func FuzzDecodeConfig(f *testing.F) {
	for _, s := range []string{"", required, "server:\n  listen: 127.0.0.1:0\n", "agent:\n  cache_bytes: 1048576\n",
		"batcher:\n  linger: 5ms\n", "batcher:\n  linger: 5\n", "log: ~\n", "- a\n", "x: 1\n", "server: 1\n",
		"server:\n  listen: [a]\n", "server:\n  nope: 1\n", "log:\n  level: debug\nlog:\n  level: info\n",
		"a: &x [*x]\n", "agent:\n  cache_bytes: 1e400\n", "{", "\t", "server:\n  listen: \"\\xff\"\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := DefaultServerConfig("dev")
		if err := decodeConfig(&c, data); err != nil {
			return
		}
		out, err := printConfig(&c, "dev")
		if err != nil {
			t.Fatalf("decoded %q, but printConfig: %v", data, err)
		}
		again := DefaultServerConfig("dev")
		if err := decodeConfig(&again, out); err != nil {
			t.Fatalf("decoded %q, printed\n%s\nwhich does not decode: %v", data, out, err)
		}
		out2, err := printConfig(&again, "dev")
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("decoded %q, printed\n%s\ndecoded and printed again\n%s(%v)", data, out, out2, err)
		}
	})
}

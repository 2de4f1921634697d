package main

import (
	"net/http"
	"net/http/pprof"
)

// registerPprof serves Go's profiles under /debug/pprof/ on the metrics
// listener (setting server.pprof: off by default, since a profile costs
// CPU and shows the process's internals to whoever reaches the port).
func registerPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

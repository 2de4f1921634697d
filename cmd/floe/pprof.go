package main

import (
	"net/http"
	"net/http/pprof"
)

// mountPprof serves Go's runtime profiles under /debug/pprof/ on mux (the
// metrics listener), for server.pprof / -pprof. Off by default: a profile
// shows the process's internals and a CPU profile costs CPU while it runs.
//
//	go tool pprof -seconds 30 http://127.0.0.1:7071/debug/pprof/profile
func mountPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

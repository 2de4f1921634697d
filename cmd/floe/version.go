package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time to override what the build info says:
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=abc123"
var (
	version = ""
	commit  = ""
)

// versionString is "floe VERSION (commit COMMIT[, modified], DATE) GOVERSION OS/ARCH",
// from the link-time values, else the module and VCS build info.
func versionString() string {
	v, c, when, modified := version, commit, "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" {
					c = s.Value
				}
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true" && commit == ""
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if c == "" {
		c = "unknown"
	}
	out := fmt.Sprintf("floe %s (commit %s", v, c)
	if modified {
		out += ", modified"
	}
	if when != "" && commit == "" {
		out += ", " + when
	}
	return out + fmt.Sprintf(") %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

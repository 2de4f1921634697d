package bench

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Connection pools of the HTTP and NATS clients close asynchronously.
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		// The database/sql opener of modernc's driver.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}

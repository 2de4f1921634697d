package bench

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/internal/testenv"
)

// TestMain runs the tests in testenv's per-process temporary folder (the
// NATS servers and deployments the tests start live there and go with it)
// and checks that no goroutine is left.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.VerifyNoLeaks(
		// Connection pools of the HTTP and NATS clients close asynchronously.
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		// The database/sql opener of modernc's driver.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	))
}

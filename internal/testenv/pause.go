package testenv

import (
	"sync"
	"syscall"
	"testing"
)

// PauseS3 freezes the test process's S3 server (versitygw) with SIGSTOP, as
// a hung server: connections stay open and requests get no answer. It
// returns a function that resumes it with SIGCONT; the server is also
// resumed when t ends. It fails t for an external server
// (FLOE_TEST_S3_ENDPOINT), which the tests cannot pause.
//
// The server is shared by the test process: a test that pauses it must not
// run in parallel with other tests using S3.
func PauseS3(t testing.TB) (resume func()) {
	t.Helper()
	srv := sharedS3(t)
	pid := srv.Pid()
	if srv.external || pid <= 0 {
		t.Fatalf("testenv: cannot pause the external S3 server at %s", srv.Endpoint)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("testenv: pause S3 server (pid %d): %v", pid, err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("testenv: resume S3 server (pid %d): %v", pid, err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

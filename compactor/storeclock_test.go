package compactor_test

import (
	"context"
	"testing"
	"time"
)

// storeNow is the metadata store's clock, the one the compactor measures
// ages with (batch append times, dead-file marks).
func storeNow(t testing.TB, e env) time.Time {
	t.Helper()
	now, err := e.meta.Now(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// waitStore waits until the store's clock is past until: an age the test
// needs has passed by the clock the compactor reads, however long the
// machine took (no sleep of a guessed length).
func waitStore(t testing.TB, e env, until time.Time) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !storeNow(t, e).After(until); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the store's clock did not pass %v within a minute", until)
		}
	}
}

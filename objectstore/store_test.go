package objectstore_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/objtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemory(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objectstore.Store { return objectstore.NewMemory() })
}

func TestDir(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objectstore.Store {
		d, err := objectstore.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}

func TestPrefixOverMemory(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objectstore.Store {
		// Noise outside the prefix must stay invisible.
		inner := objectstore.NewMemory()
		if err := inner.Put(t.Context(), "other/p/a", []byte("noise"), objectstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := inner.Put(t.Context(), "tenant", []byte("noise"), objectstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		return objectstore.WithPrefix(inner, "tenant/x")
	})
}

func TestPrefixOverDir(t *testing.T) {
	objtest.Run(t, func(t *testing.T) objectstore.Store {
		d, err := objectstore.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return objectstore.WithPrefix(d, "floe/")
	})
}

func TestMetricsOverMemory(t *testing.T) {
	reg := prometheus.NewRegistry()
	objtest.Run(t, func(t *testing.T) objectstore.Store {
		return objectstore.WithMetrics(objectstore.NewMemory(), reg)
	})
}

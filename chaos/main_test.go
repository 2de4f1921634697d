package chaos

import (
	"testing"

	"github.com/floe-broker/floe/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

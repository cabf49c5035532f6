package hierarchical_test

import (
	"testing"

	"github.com/wheeltimer/wheeltimer/benchmarks/internal/timertest"
)

func TestMain(m *testing.M) { timertest.Main(m) }

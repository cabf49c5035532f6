package timertest

import (
	"io"
	"log/slog"
	"testing"

	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

// Main is the TestMain of a package that runs this suite: it fails the
// package if a test leaves a goroutine behind. The suite panics tasks on
// purpose, so the logs are discarded.
func Main(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	leaktest.VerifyTestMain(m)
}

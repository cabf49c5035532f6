package timertest

import (
	"io"
	"log/slog"
	"testing"

	"go.uber.org/goleak"
)

// Main is the TestMain of a package that runs this suite: it fails the
// package if a test leaves a goroutine behind. ants starts a default pool
// when it is imported; its two goroutines are not ours. The suite panics
// tasks on purpose, so the logs are discarded.
func Main(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}

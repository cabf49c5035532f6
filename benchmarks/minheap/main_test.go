package minheap_test

import (
	"io"
	"log/slog"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind. ants
// starts a default pool when it is imported; its two goroutines are not
// ours.
func TestMain(m *testing.M) {
	// The conformance suite panics tasks on purpose; keep the logs quiet.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}

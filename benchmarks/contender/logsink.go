package contender

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// maxLogLines bounds the log lines kept for the report.
const maxLogLines = 20

// sink keeps the first log records of every timer under test, so that a
// warning (a refused executor, a panicking task) shows up in the report
// instead of scribbling over the progress line.
var sink = &logSink{}

type logSink struct {
	mu      sync.Mutex
	lines   []string
	dropped int
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lines) < maxLogLines {
		s.lines = append(s.lines, strings.TrimSpace(string(p)))
	} else {
		s.dropped++
	}
	return len(p), nil
}

var logger = slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelWarn}))

// Logger returns the logger given to every timer under test.
func Logger() *slog.Logger { return logger }

// Logs returns the log lines the timers have written so far.
func Logs() []string {
	sink.mu.Lock()
	defer sink.mu.Unlock()
	out := append([]string(nil), sink.lines...)
	if sink.dropped > 0 {
		out = append(out, fmt.Sprintf("… and %d more", sink.dropped))
	}
	return out
}

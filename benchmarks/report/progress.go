package report

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// maxLineWidth keeps the progress line narrower than a terminal, since a
// wrapped line cannot be rewritten with a carriage return.
const maxLineWidth = 100

// Line is a single progress line, rewritten in place with a carriage
// return at each update rather than printed once per event.
type Line struct {
	mu       sync.Mutex
	w        io.Writer
	start    time.Time
	scenario string
	width    int // of the text last written, to blank its tail
}

// NewLine returns a progress line writing to w.
func NewLine(w io.Writer) *Line { return &Line{w: w, start: time.Now()} }

// Scenario names the scenario the following updates belong to.
func (l *Line) Scenario(i, n int, name string) {
	l.mu.Lock()
	l.scenario = fmt.Sprintf("%d/%d %s", i, n, name)
	l.mu.Unlock()
}

// Status rewrites the line with s.
func (l *Line) Status(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	elapsed := time.Since(l.start).Truncate(time.Second)
	l.write(fmt.Sprintf("[%s, %v] %s", l.scenario, elapsed, s))
}

// Done rewrites the line with s and ends it, so that later output starts on
// a line of its own.
func (l *Line) Done(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.write(s)
	fmt.Fprintln(l.w)
	l.width = 0
}

func (l *Line) write(text string) {
	if r := []rune(text); len(r) > maxLineWidth {
		text = string(r[:maxLineWidth-1]) + "…"
	}
	n := len([]rune(text))
	pad := max(l.width-n, 0)
	fmt.Fprintf(l.w, "\r%s%s", text, strings.Repeat(" ", pad))
	l.width = n
}

package report

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// maxLineWidth keeps the progress line narrower than a terminal, since a
// wrapped line cannot be rewritten with a carriage return.
const maxLineWidth = 100

// Line shows a run's progress. On a terminal it is a single line,
// rewritten in place with a carriage return at each update. Anywhere else,
// such as a CI log, it prints plain lines, one per step of a scenario: the
// repeats of one measurement ("run 2/5") are left out.
type Line struct {
	mu       sync.Mutex
	w        io.Writer
	redraw   bool // w is a terminal
	start    time.Time
	scenario string
	width    int    // of the text last written, to blank its tail
	lastStep string // the step last printed, in plain mode
}

// NewLine returns a progress display writing to w, redrawn in place only
// if w is a terminal.
func NewLine(w io.Writer) *Line { return newLine(w, isTerminal(w)) }

func newLine(w io.Writer, redraw bool) *Line {
	return &Line{w: w, redraw: redraw, start: time.Now()}
}

// isTerminal reports whether w is a character device, as a terminal is.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Scenario names the scenario the following updates belong to.
func (l *Line) Scenario(i, n int, name string) {
	l.mu.Lock()
	l.scenario = fmt.Sprintf("%d/%d %s", i, n, name)
	l.lastStep = ""
	l.mu.Unlock()
}

// Status shows s: it rewrites the line, or prints it unless it only
// repeats the step printed last.
func (l *Line) Status(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	elapsed := time.Since(l.start).Truncate(time.Second)
	text := fmt.Sprintf("[%s, %v] %s", l.scenario, elapsed, s)
	if l.redraw {
		l.rewrite(text)
		return
	}
	if step := stepOf(s); step != l.lastStep {
		l.lastStep = step
		fmt.Fprintln(l.w, text)
	}
}

// Done shows s and ends the line, so that later output starts on a line of
// its own.
func (l *Line) Done(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.redraw {
		fmt.Fprintln(l.w, s)
		return
	}
	l.rewrite(s)
	fmt.Fprintln(l.w)
	l.width = 0
}

func (l *Line) rewrite(text string) {
	if r := []rune(text); len(r) > maxLineWidth {
		text = string(r[:maxLineWidth-1]) + "…"
	}
	n := len([]rune(text))
	pad := max(l.width-n, 0)
	fmt.Fprintf(l.w, "\r%s%s", text, strings.Repeat(" ", pad))
	l.width = n
}

// repeatCount is the count a status line ends with when it repeats one
// measurement: ", run 2/5", ", window 1/3".
var repeatCount = regexp.MustCompile(`, [a-z]+ \d+/\d+$`)

// stepOf returns a status line without its repeat count.
func stepOf(s string) string { return repeatCount.ReplaceAllString(s, "") }

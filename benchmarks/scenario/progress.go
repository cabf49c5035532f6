package scenario

import "fmt"

// Progress receives one short status line per step of a scenario. Steps
// that repeat one measurement end in its count, "run 2/5" or "window
// 2/5", so that a display can show only the first of them.
type Progress interface {
	Status(line string)
}

// status formats a status line for p, if there is one.
func status(p Progress, format string, args ...any) {
	if p != nil {
		p.Status(fmt.Sprintf(format, args...))
	}
}

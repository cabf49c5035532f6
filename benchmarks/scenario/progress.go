package scenario

import "fmt"

// Progress receives one short status line per step of a scenario.
type Progress interface {
	Status(line string)
}

// status formats a status line for p, if there is one.
func status(p Progress, format string, args ...any) {
	if p != nil {
		p.Status(fmt.Sprintf(format, args...))
	}
}

package report

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// ns formats a duration given in nanoseconds with three significant
// digits and a unit that keeps it short.
func ns(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	sign := ""
	if x < 0 {
		sign, x = "−", -x
	}
	switch {
	case x < 1e3:
		return sign + sig(x) + " ns"
	case x < 1e6:
		return sign + sig(x/1e3) + " µs"
	case x < 1e9:
		return sign + sig(x/1e6) + " ms"
	}
	return sign + sig(x/1e9) + " s"
}

// dur formats a duration like ns.
func dur(d time.Duration) string { return ns(float64(d)) }

// sig formats x with three significant digits.
func sig(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// ratio formats x/base as a factor, or "—" when it would mean nothing (a
// missing figure, or a baseline too close to zero).
func ratio(x, base float64) string {
	if math.IsNaN(x) || math.IsNaN(base) || base <= 0 || x < 0 {
		return "—"
	}
	return sig(x/base) + "×"
}

// withRatio formats a timing in nanoseconds followed by its ratio.
func withRatio(x, base float64) string {
	return ns(x) + " (" + ratio(x, base) + ")"
}

// count formats a population: 0, 100k, 1M, 10M.
func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// table writes a Markdown table.
func table(b *strings.Builder, header []string, rows [][]string) {
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	b.WriteString("\n")
}

// span formats a round duration the short way: 1h, 10m, 30s; others as
// time.Duration does.
func span(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

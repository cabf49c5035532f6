package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

// ns formats a duration given in nanoseconds with three significant
// digits and a unit that keeps it short.
func ns(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	div, unit := unitOf(x)
	return signed(x/div) + " " + unit
}

// unitOf returns the unit ns writes x in, and its size in nanoseconds.
func unitOf(x float64) (float64, string) {
	switch x = math.Abs(x); {
	case x < 1e3:
		return 1, "ns"
	case x < 1e6:
		return 1e3, "µs"
	case x < 1e9:
		return 1e6, "ms"
	}
	return 1e9, "s"
}

// signed formats x with three significant digits and a minus sign.
func signed(x float64) string {
	if x < 0 {
		return "−" + sig(-x)
	}
	return sig(x)
}

// spread formats a figure over runs: its median by median, then, in
// brackets, the least and the most of the runs by bound: "162 ns
// (155–171)". One run has no range; none is "n/a".
func spread(s scenario.Stat, median, bound func(float64) string) string {
	if s.Runs == 0 || math.IsNaN(s.Median) {
		return "n/a"
	}
	if s.Runs == 1 {
		return median(s.Median)
	}
	sep := "–"
	if s.Min < 0 || s.Max < 0 {
		sep = " to " // a dash between negative figures reads as a minus
	}
	return median(s.Median) + " (" + bound(s.Min) + sep + bound(s.Max) + ")"
}

// nsSpread formats a timing in nanoseconds over runs, its range in the
// median's unit, "1.32 s (1.10–1.55)", but for a bound a thousand such
// units or more, which has its own: "20.0 µs (18.0–29.4 ms)".
func nsSpread(s scenario.Stat) string {
	div, _ := unitOf(s.Median)
	return spread(s, ns, func(x float64) string {
		if math.Abs(x/div) >= 1000 {
			return ns(x)
		}
		return signed(x / div)
	})
}

// nsSpreadRatio formats a timing over runs followed by the ratio of its
// median to the baseline's: "162 ns (155–171) 0.50×".
func nsSpreadRatio(x, base scenario.Stat) string {
	return nsSpread(x) + " " + ratio(x.Median, base.Median)
}

// percentSpread formats a share of a core, in percent, over runs.
func percentSpread(s scenario.Stat) string {
	return spread(s, func(x float64) string { return fmt.Sprintf("%.3f%%", x) },
		func(x float64) string { return fmt.Sprintf("%.3f", x) })
}

// rateSpread formats a rate per second, in millions, over runs.
func rateSpread(s scenario.Stat) string {
	return spread(s, func(x float64) string { return fmt.Sprintf("%.2fM/s", x/1e6) },
		func(x float64) string { return fmt.Sprintf("%.2f", x/1e6) })
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

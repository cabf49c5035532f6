package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/wheeltimer/wheeltimer/benchmarks/scenario"
)

// palette gives each contender, by its index in Results.Contenders, the
// same colour and dash pattern in every chart.
var palette = []color.RGBA{
	{0, 0, 0, 255},       // time.AfterFunc: black, the reference
	{230, 159, 0, 255},   // orange
	{0, 114, 178, 255},   // blue
	{86, 180, 233, 255},  // sky blue
	{213, 94, 0, 255},    // vermillion
	{0, 158, 115, 255},   // green
	{204, 121, 167, 255}, // purple
}

var dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(2)}, nil, {vg.Points(2), vg.Points(2)}, nil, {vg.Points(6), vg.Points(2), vg.Points(2), vg.Points(2)}, nil}

func style(i int) (color.RGBA, []vg.Length) { return palette[i%len(palette)], dashes[i%len(dashes)] }

// WriteCharts writes into dir, in r.ChartFormat, the charts of the
// scenarios the run measured, and returns how many it wrote.
func WriteCharts(r *Results, dir string) (int, error) {
	written := 0
	for _, c := range []struct {
		name, scenario string
		draw           func(*Results) ([][]*plot.Plot, error)
	}{
		{ChartPending, "churn", pendingPlots},
		{ChartCrossover, "ratio", crossoverPlots},
		{ChartLateness, "lateness", latenessPlots},
		{ChartRearm, "rearm", rearmPlots},
		{ChartScaling, "scaling", scalingPlots},
	} {
		if !r.Ran(c.scenario) {
			continue
		}
		plots, err := c.draw(r)
		if err != nil {
			return written, fmt.Errorf("%s: %w", c.name, err)
		}
		if err := save(plots, filepath.Join(dir, chart(r, c.name))); err != nil {
			return written, fmt.Errorf("%s: %w", c.name, err)
		}
		written++
	}
	return written, nil
}

// canvas is an image that can be drawn on and written out.
type canvas interface {
	vg.CanvasSizer
	io.WriterTo
}

// save lays the plots out in a grid, one row per slice, in one image whose
// format follows the file name: SVG, or PNG.
func save(plots [][]*plot.Plot, path string) error {
	cols := len(plots[0])
	w, h := vg.Length(cols)*11*vg.Centimeter, vg.Length(len(plots))*9*vg.Centimeter
	var img canvas = vgsvg.New(w, h)
	if strings.HasSuffix(path, ".png") {
		img = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))}
	}
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: cols, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// addLine adds one contender's series to p, skipping points that a log
// axis cannot show, and reports whether any point was left.
func addLine(p *plot.Plot, i int, name string, pts plotter.XYs, logY bool) (bool, error) {
	var keep plotter.XYs
	for _, pt := range pts {
		if math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) || logY && pt.Y <= 0 {
			continue
		}
		keep = append(keep, pt)
	}
	if len(keep) == 0 {
		return false, nil
	}
	l, s, err := plotter.NewLinePoints(keep)
	if err != nil {
		return false, err
	}
	c, d := style(i)
	l.Color, l.Dashes, l.Width = c, d, vg.Points(1.5)
	s.Color, s.Shape = c, draw.CircleGlyph{}
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return true, nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Add(plotter.NewGrid())
	return p
}

// logY puts p's y axis on a log scale, if it has data (an empty log axis
// cannot be drawn, so an empty plot says so instead), with a decade of
// headroom above the data for the legend.
func logY(p *plot.Plot, hasData bool) {
	if !hasData {
		p.Title.Text += " (no data)"
		return
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Max *= 10
}

// pendingPlots: ns/op of schedule+cancel against the pending population,
// one goroutine and all of them.
func pendingPlots(r *Results) ([][]*plot.Plot, error) {
	return populationPlots(r, r.ChurnParams.Pending, "schedule + cancel", "timeouts already pending",
		func(name string, n, g int) (float64, bool) {
			if x := churnRow(r, name, n, g); x != nil {
				return x.NsPerOp.Median, true
			}
			return 0, false
		})
}

// rearmPlots: ns/op of a re-arm against the number of connections, one
// goroutine and all of them.
func rearmPlots(r *Results) ([][]*plot.Plot, error) {
	return populationPlots(r, r.RearmParams.Connections, "re-arm", "connections, one timeout each",
		func(name string, n, g int) (float64, bool) {
			if x := rearmRow(r, name, n, g); x != nil {
				return x.NsPerOp.Median, true
			}
			return 0, false
		})
}

// populationPlots draws, for one goroutine and for GOMAXPROCS, one line
// per contender of the wall ns/op that nsPerOp gives at each population in
// ns. The populations sit at evenly spaced positions, since 0 has no
// logarithm.
func populationPlots(r *Results, ns []int, what, xLabel string, nsPerOp func(name string, n, g int) (float64, bool)) ([][]*plot.Plot, error) {
	ticks := make(plot.ConstantTicks, len(ns))
	for i, n := range ns {
		ticks[i] = plot.Tick{Value: float64(i), Label: count(n)}
	}
	var row []*plot.Plot
	for _, g := range goroutineCounts(r) {
		title := what + ", 1 goroutine"
		if g > 1 {
			title = fmt.Sprintf("%s, %d goroutines", what, g)
		}
		p := newPlot(title, xLabel, "ns per operation (wall)")
		p.X.Tick.Marker = ticks
		p.X.Min, p.X.Max = -0.2, float64(len(ns)-1)+0.2
		hasData := false
		for i, c := range r.Contenders {
			var pts plotter.XYs
			for j, n := range ns {
				if y, ok := nsPerOp(c.Name, n, g); ok {
					pts = append(pts, plotter.XY{X: float64(j), Y: y})
				}
			}
			added, err := addLine(p, i, c.Name, pts, true)
			if err != nil {
				return nil, err
			}
			hasData = hasData || added
		}
		logY(p, hasData)
		row = append(row, p)
	}
	return [][]*plot.Plot{row}, nil
}

// scalingPlots: aggregate ns/op of schedule+cancel against GOMAXPROCS,
// which sits at evenly spaced positions (the values double).
func scalingPlots(r *Results) ([][]*plot.Plot, error) {
	procs := r.ScalingParams.Procs
	ticks := make(plot.ConstantTicks, len(procs))
	for i, n := range procs {
		ticks[i] = plot.Tick{Value: float64(i), Label: fmt.Sprint(n)}
	}
	p := newPlot(fmt.Sprintf("schedule + cancel on GOMAXPROCS goroutines, %d CPUs", r.Machine.NumCPU),
		"GOMAXPROCS (= goroutines)", "ns per operation (aggregate wall)")
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = -0.2, float64(max(len(procs)-1, 0))+0.2
	hasData := false
	for i, c := range r.Contenders {
		var pts plotter.XYs
		for j, n := range procs {
			if x := scalingRow(r, c.Name, n); x != nil {
				pts = append(pts, plotter.XY{X: float64(j), Y: x.NsPerOp.Median})
			}
		}
		added, err := addLine(p, i, c.Name, pts, true)
		if err != nil {
			return nil, err
		}
		hasData = hasData || added
	}
	logY(p, hasData)
	return [][]*plot.Plot{{p}}, nil
}

// crossoverPlots: CPU per timeout against D/(W·tick), log–log.
func crossoverPlots(r *Results) ([][]*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("%s timeouts in flight, delay %v, tick %v, W = D/(ratio·tick)",
		count(r.RatioParams.Pending), r.RatioParams.Delay, r.RatioParams.Tick),
		"D / (W·tick): turns of the wheel a timeout waits", "process CPU per timeout (ns)")
	var ticks plot.ConstantTicks
	for _, x := range r.RatioParams.Ratios {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
	}
	hasData := false
	for i, c := range r.Contenders {
		var pts plotter.XYs
		for _, x := range r.RatioParams.Ratios {
			if y := ratioRow(r, c.Name, x); y != nil {
				pts = append(pts, plotter.XY{X: x, Y: y.CPUPerTimeout.Median})
			}
		}
		added, err := addLine(p, i, c.Name, pts, true)
		if err != nil {
			return nil, err
		}
		hasData = hasData || added
	}
	logY(p, hasData)
	if hasData {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = ticks
	}
	return [][]*plot.Plot{{p}}, nil
}

// nines maps a quantile to its "number of nines", so that p50, p90, p99
// and p999 sit evenly along the x axis.
func nines(q float64) float64 { return -math.Log10(1 - q) }

// latenessPlots: lateness by percentile, CPUs idle and busy, up to p999.
func latenessPlots(r *Results) ([][]*plot.Plot, error) {
	ticks := plot.ConstantTicks{
		{Value: nines(0), Label: "min"}, {Value: nines(0.5), Label: "p50"}, {Value: nines(0.9), Label: "p90"},
		{Value: nines(0.99), Label: "p99"}, {Value: nines(0.999), Label: "p999"},
	}
	var row []*plot.Plot
	for _, busy := range []bool{false, true} {
		title := "lateness, CPUs idle"
		if busy {
			title = "lateness, CPUs busy"
		}
		p := newPlot(title, "percentile", "fire time − due time (ms); below 0 is early")
		p.X.Tick.Marker = ticks
		limit := clipLimit(r, busy)
		for i, c := range r.Contenders {
			l := find(r.Lateness, func(x *scenario.LatenessRow) bool { return x.Contender == c.Name && x.Busy == busy })
			if l == nil || len(l.Samples) == 0 {
				continue
			}
			var pts plotter.XYs
			name := c.Name
			for k := 0; k <= 60; k++ {
				q := 1 - math.Pow(10, -3*float64(k)/60) // 0 … 0.999, evenly in nines
				y := float64(quantileOf(l.Samples, q)) / 1e6
				if y > limit {
					y, name = limit, c.Name+" (clipped)"
				}
				pts = append(pts, plotter.XY{X: nines(q), Y: y})
			}
			if _, err := addLine(p, i, name, pts, false); err != nil {
				return nil, err
			}
		}
		// Headroom for the legend.
		p.Y.Max += (p.Y.Max - p.Y.Min) * 0.6
		row = append(row, p)
	}
	return [][]*plot.Plot{row}, nil
}

// clipLimit returns, in milliseconds, the top of the lateness axis: a
// little above the highest p999 of the timers that never fire early, so
// that one far slower contender does not flatten the others into the
// axis. Lines above it are clipped and say so in the legend.
func clipLimit(r *Results, busy bool) float64 {
	limit := 0.0
	for _, c := range r.Contenders {
		l := find(r.Lateness, func(x *scenario.LatenessRow) bool { return x.Contender == c.Name && x.Busy == busy })
		if c.NeverEarly && l != nil && len(l.Samples) > 0 {
			limit = max(limit, float64(quantileOf(l.Samples, 0.999))/1e6)
		}
	}
	if limit == 0 {
		return math.Inf(1)
	}
	return limit * 1.2
}

// quantileOf is the nearest-rank quantile of sorted samples; q = 0 is the
// minimum.
func quantileOf(sorted []int64, q float64) int64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

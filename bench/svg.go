package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// XY is one chart point.
type XY struct{ X, Y float64 }

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []XY
	Dashed bool
}

// Chart is a line chart with a logarithmic latency axis, rendered to SVG
// without dependencies.
type Chart struct {
	Title, XLabel, YLabel string
	// XNines plots X (a percentile) on a "nines" scale: 90, 99, 99.9, ...
	XNines bool
	Series []Series
}

// Chart returns the report's chart: latency against throughput for a
// sweep, else the latency distribution of the headline runs.
func (r *Report) Chart() Chart {
	if len(r.FloeSweep) > 0 {
		c := Chart{Title: "Latency against throughput", XLabel: "acknowledged throughput (MB/s)", YLabel: "latency (ms, log scale)"}
		add := func(sys string, runs []RunResult, dashed bool) {
			var p50, p99, e99 Series
			p50 = Series{Name: sys + " produce p50", Dashed: dashed}
			p99 = Series{Name: sys + " produce p99", Dashed: dashed}
			e99 = Series{Name: sys + " end-to-end p99", Dashed: dashed}
			for _, x := range runs {
				p50.Points = append(p50.Points, XY{x.MBPerSec, x.Produce.P50Ms})
				p99.Points = append(p99.Points, XY{x.MBPerSec, x.Produce.P99Ms})
				if x.E2E != nil {
					e99.Points = append(e99.Points, XY{x.MBPerSec, x.E2E.P99Ms})
				}
			}
			c.Series = append(c.Series, p50, p99)
			if len(e99.Points) > 0 {
				c.Series = append(c.Series, e99)
			}
		}
		add("floe", r.FloeSweep, false)
		if len(r.PeerSweep) > 0 {
			add(r.Settings.Peer, r.PeerSweep, true)
		}
		return c
	}
	c := Chart{Title: "Latency distribution", XLabel: "percentile", YLabel: "latency (ms, log scale)", XNines: true}
	dist := func(name string, pts []Point, dashed bool) {
		if len(pts) == 0 {
			return
		}
		s := Series{Name: name, Dashed: dashed}
		for _, p := range pts {
			s.Points = append(s.Points, XY{p.Percentile, p.Ms})
		}
		c.Series = append(c.Series, s)
	}
	dist("floe produce", r.Floe.ProduceDist, false)
	dist("floe end-to-end", r.Floe.E2EDist, false)
	if r.Peer != nil {
		dist(r.Settings.Peer+" produce", r.Peer.ProduceDist, true)
		dist(r.Settings.Peer+" end-to-end", r.Peer.E2EDist, true)
	}
	return c
}

// WriteSVG writes the report's chart.
func (r *Report) WriteSVG(w io.Writer) error {
	_, err := io.WriteString(w, r.Chart().SVG())
	return err
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

const (
	svgW, svgH                 = 860, 480
	padL, padR, padT, padB     = 70, 210, 40, 50
	plotW, plotH               = svgW - padL - padR, svgH - padT - padB
	ninesCap                   = 6.0
	minLatencyMs               = 0.01
	legendLine, legendLineStep = 24, 20
)

func nines(p float64) float64 {
	if p >= 100 {
		return ninesCap
	}
	return math.Min(-math.Log10(1-p/100), ninesCap)
}

// SVG renders the chart.
func (c Chart) SVG() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", padL, html.EscapeString(c.Title))

	// Ranges.
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			x := p.X
			if c.XNines {
				x = nines(x)
			}
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			y := math.Max(p.Y, minLatencyMs)
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
		}
	}
	if math.IsInf(xmin, 0) { // no data
		xmin, xmax, ymin, ymax = 0, 1, 1, 10
	}
	if c.XNines {
		xmin, xmax = 0, math.Max(1, math.Ceil(xmax))
	} else {
		xmin = math.Min(0, xmin)
		xmax = niceCeil(xmax * 1.05)
	}
	lymin := math.Floor(math.Log10(ymin))
	lymax := math.Ceil(math.Log10(ymax))
	if lymax <= lymin {
		lymax = lymin + 1
	}
	px := func(x float64) float64 { return padL + (x-xmin)/(xmax-xmin)*plotW }
	py := func(y float64) float64 {
		y = math.Max(y, minLatencyMs)
		return padT + plotH - (math.Log10(y)-lymin)/(lymax-lymin)*plotH
	}

	// Grid and axes.
	b.WriteString(`<g stroke="#ddd" stroke-width="1">` + "\n")
	var yt []float64
	for e := lymin; e <= lymax; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if math.Log10(v) <= lymax+1e-9 {
				yt = append(yt, v)
			}
		}
	}
	for _, v := range yt {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", padL, py(v), padL+plotW, py(v))
	}
	xt := c.xTicks(xmin, xmax)
	for _, t := range xt {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", px(t.v), padT, px(t.v), padT+plotH)
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", padL, padT, plotW, plotH)
	for _, v := range yt {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, py(v)+4, num(v))
	}
	for _, t := range xt {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px(t.v), padT+plotH+16, t.label)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padL+plotW/2, svgH-10, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+plotH/2, html.EscapeString(c.YLabel))

	// Series and legend.
	for i, s := range c.Series {
		col := palette[i%len(palette)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for _, p := range s.Points {
			x := p.X
			if c.XNines {
				x = nines(x)
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x), py(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", col, dash, strings.Join(pts, " "))
		if !c.XNines {
			for _, pt := range pts {
				xy := strings.Split(pt, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], col)
			}
		}
		ly := padT + 10 + i*legendLineStep
		lx := padL + plotW + 14
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+legendLine, ly, col, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+legendLine+6, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

type tick struct {
	v     float64
	label string
}

func (c Chart) xTicks(xmin, xmax float64) []tick {
	var out []tick
	if c.XNines {
		for n := 0.0; n <= xmax; n++ {
			p := 100 * (1 - math.Pow(10, -n))
			out = append(out, tick{n, strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", p), "0"), ".") + "%"})
		}
		return out
	}
	step := niceStep((xmax - xmin) / 6)
	for v := math.Ceil(xmin/step) * step; v <= xmax+1e-9; v += step {
		out = append(out, tick{v, num(v)})
	}
	return out
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// niceCeil rounds up to a multiple of a nice step.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	s := niceStep(v / 6)
	return math.Ceil(v/s) * s
}

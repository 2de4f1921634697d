package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sample is one line of the Prometheus text exposition format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the Prometheus text format (comments and timestamps
// are skipped; histograms appear as their _bucket, _sum and _count lines).
func ParseMetrics(r io.Reader) ([]Sample, error) {
	var out []Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSampleLine(line)
		if err != nil {
			return nil, fmt.Errorf("bench: metrics line %d %q: %w", ln, line, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: read metrics: %w", err)
	}
	return out, nil
}

func parseSampleLine(line string) (Sample, error) {
	s := Sample{}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return s, fmt.Errorf("no value")
	}
	s.Name, line = line[:i], line[i:]
	if line[0] == '{' {
		s.Labels = map[string]string{}
		line = line[1:]
		for {
			line = strings.TrimLeft(line, " ,")
			if line == "" {
				return s, fmt.Errorf("unterminated labels")
			}
			if line[0] == '}' {
				line = line[1:]
				break
			}
			eq := strings.IndexByte(line, '=')
			if eq <= 0 || len(line) < eq+2 || line[eq+1] != '"' {
				return s, fmt.Errorf("malformed label")
			}
			name := strings.TrimSpace(line[:eq])
			line = line[eq+2:]
			var val strings.Builder
			j := 0
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
					switch line[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(line[j])
					}
					continue
				}
				val.WriteByte(line[j])
			}
			if j == len(line) {
				return s, fmt.Errorf("unterminated label value")
			}
			s.Labels[name] = val.String()
			line = line[j+1:]
		}
	}
	fields := strings.Fields(line)
	if len(fields) == 0 || len(fields) > 2 {
		return s, fmt.Errorf("want a value and an optional timestamp")
	}
	v, err := parseFloat(fields[0])
	if err != nil {
		return s, err
	}
	s.Value = v
	return s, nil
}

func parseFloat(f string) (float64, error) {
	switch f {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return 0, fmt.Errorf("bad value %q", f)
	}
	return v, nil
}

// Metrics is one scrape of one endpoint, indexed by series.
type Metrics map[string]float64

// seriesKey renders name{a="1",b="2"} with labels sorted.
func seriesKey(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteByte('}')
	return b.String()
}

// NewMetrics indexes samples.
func NewMetrics(samples []Sample) Metrics {
	m := make(Metrics, len(samples))
	for _, s := range samples {
		m[seriesKey(s.Name, s.Labels)] += s.Value
	}
	return m
}

// Sum adds up the series of name whose labels include every pair of match
// ("k", "v", ...).
func (m Metrics) Sum(name string, match ...string) float64 {
	var total float64
	for key, v := range m {
		if !strings.HasPrefix(key, name) {
			continue
		}
		rest := key[len(name):]
		if rest != "" && rest[0] != '{' {
			continue // a longer name
		}
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			if !strings.Contains(rest, fmt.Sprintf("%s=%q", match[i], match[i+1])) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// Sub returns m - o, series by series (counters' deltas).
func (m Metrics) Sub(o Metrics) Metrics {
	d := make(Metrics, len(m))
	for k, v := range m {
		d[k] = v - o[k]
	}
	return d
}

// Add adds o to m.
func (m Metrics) Add(o Metrics) {
	for k, v := range o {
		m[k] += v
	}
}

// Scraper reads /metrics from agents.
type Scraper struct {
	// Endpoints are host:port addresses serving /metrics.
	Endpoints []string
	client    *http.Client
}

// NewScraper returns a scraper of endpoints (host:port or full URLs).
func NewScraper(endpoints []string) *Scraper {
	return &Scraper{Endpoints: endpoints, client: &http.Client{Timeout: 5 * time.Second}}
}

func metricsURL(ep string) string {
	if strings.HasPrefix(ep, "http://") || strings.HasPrefix(ep, "https://") {
		return ep
	}
	return "http://" + ep + "/metrics"
}

// Scrape reads every endpoint once, in endpoint order.
func (s *Scraper) Scrape(ctx context.Context) ([]Metrics, error) {
	out := make([]Metrics, len(s.Endpoints))
	for i, ep := range s.Endpoints {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL(ep), nil)
		if err != nil {
			return nil, fmt.Errorf("bench: metrics of %s: %w", ep, err)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("bench: metrics of %s: %w", ep, err)
		}
		samples, err := ParseMetrics(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("bench: metrics of %s: %w", ep, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("bench: metrics of %s: HTTP %s", ep, resp.Status)
		}
		out[i] = NewMetrics(samples)
	}
	return out, nil
}

// Total adds up per-endpoint scrapes.
func Total(ms []Metrics) Metrics {
	t := Metrics{}
	for _, m := range ms {
		t.Add(m)
	}
	return t
}

// PeakSampler samples a gauge (per source) in the background and keeps the
// maximum: agents' resident memory.
type PeakSampler struct {
	mu   sync.Mutex
	peak float64
	errs int

	stop chan struct{}
	done chan struct{}
}

// StartPeakSampler calls sample every interval until Stop, keeping the
// largest value it returns.
func StartPeakSampler(interval time.Duration, sample func() (float64, error)) *PeakSampler {
	p := &PeakSampler{stop: make(chan struct{}), done: make(chan struct{})}
	take := func() {
		v, err := sample()
		p.mu.Lock()
		if err != nil {
			p.errs++
		} else if v > p.peak {
			p.peak = v
		}
		p.mu.Unlock()
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		take()
		for {
			select {
			case <-p.stop:
				take()
				return
			case <-t.C:
				take()
			}
		}
	}()
	return p
}

// Stop ends sampling and returns the peak and how many samples failed.
func (p *PeakSampler) Stop() (peak float64, failures int) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak, p.errs
}

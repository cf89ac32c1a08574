// Command benchreport turns the output of `make bench` into a report:
// results/report.md with every figure, and results/latency.png with the
// latency distribution of each local API path.
//
// Usage: benchreport <go test -bench output> <results dir>
package main

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: benchreport <bench output> <results dir>")
		os.Exit(2)
	}
	results, err := parse(os.Args[1])
	if err != nil {
		fail(err)
	}
	dir := os.Args[2]
	series, err := latencies(dir)
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(report(results, series)), 0o644); err != nil {
		fail(err)
	}
	if err := chart(filepath.Join(dir, "latency.png"), series); err != nil {
		fail(err)
	}
	fmt.Println(filepath.Join(dir, "report.md"), filepath.Join(dir, "latency.png"))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchreport:", err)
	os.Exit(1)
}

// metrics of one benchmark, by unit ("ns/op", "allocs/op", "req/s", ...).
type metrics map[string]float64

// parse reads `go test -bench` lines: name, iterations, then value-unit pairs.
func parse(path string) (map[string]metrics, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]metrics{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(fields[0], "Benchmark")
		if i := strings.LastIndex(name, "-"); i > 0 {
			name = name[:i] // the GOMAXPROCS suffix
		}
		m := metrics{}
		for i := 2; i+1 < len(fields); i += 2 {
			if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
				m[fields[i+1]] = v
			}
		}
		out[name] = m
	}
	return out, sc.Err()
}

type series struct {
	name string
	ms   []float64 // sorted
}

func latencies(dir string) ([]series, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "latency-*.txt"))
	sort.Strings(files)
	var out []series
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s series
		s.name = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "latency-BenchmarkLocalAPI_"), ".txt")
		for _, line := range strings.Fields(string(b)) {
			if v, err := strconv.ParseFloat(line, 64); err == nil {
				s.ms = append(s.ms, v)
			}
		}
		sort.Float64s(s.ms)
		if len(s.ms) > 0 {
			out = append(out, s)
		}
	}
	return out, nil
}

func report(r map[string]metrics, lat []series) string {
	var b strings.Builder
	get := func(name, unit string) string {
		v, ok := r[name][unit]
		if !ok {
			return "—"
		}
		switch {
		case unit == "ns/op" && v >= 1000:
			return fmt.Sprintf("%.2f µs", v/1000)
		case unit == "ns/op":
			return fmt.Sprintf("%.0f ns", v)
		case v == float64(int64(v)):
			return strconv.FormatInt(int64(v), 10)
		}
		return fmt.Sprintf("%.2f", v)
	}
	b.WriteString("# Benchmark report\n\nOne `make bench` run on this machine. Figures, not pass/fail.\n\n")
	b.WriteString("## Engine and handler (memory store, CPU only)\n\n| benchmark | time/op | allocs/op |\n|---|---|---|\n")
	for _, n := range []string{"ClaimComplete", "Replay/store", "Replay/warm-cache", "Handler/first", "Handler/replay",
		"ParseRequest/parse-request", "ParseRequest/strict-decode", "ParseRequest/yardstick-encoding-json"} {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", n, get(n, "ns/op"), get(n, "allocs/op"))
	}
	if strict, yard := r["ParseRequest/strict-decode"]["ns/op"], r["ParseRequest/yardstick-encoding-json"]["ns/op"]; yard > 0 {
		fmt.Fprintf(&b, "\nThe strict decoder costs %.2f × encoding/json on the same body (the yardstick above, same run).\n", strict/yard)
	}
	b.WriteString("\n## DynamoDB round trips per path (counted on the wire)\n\n| path | round trips | design's minimum |\n|---|---|---|\n")
	for _, p := range [][2]string{{"first-execution", "2"}, {"replay", "1"}, {"replay-warm-cache", "0"}, {"in-flight", "1"}, {"key-reused", "1"}} {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", p[0], get("RoundTrips/"+p[0], "trips/op"), p[1])
	}
	raw := r["LocalAPI/raw-conditional-put"]["req/s"]
	b.WriteString("\n## Local API (gateway → RIE, 2 instances → DynamoDB Local), 4 clients\n\n| path | req/s | p50 ms | p99 ms | ÷ raw put rate |\n|---|---|---|---|---|\n")
	for _, p := range []string{"raw-conditional-put", "first-execution", "replay", "storm-of-20"} {
		ratio := "—"
		if raw > 0 {
			ratio = fmt.Sprintf("%.2f", r["LocalAPI/"+p]["req/s"]/raw)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", p, get("LocalAPI/"+p, "req/s"), get("LocalAPI/"+p, "p50_ms"), get("LocalAPI/"+p, "p99_ms"), ratio)
	}
	b.WriteString("\nFirst executions need two writes, so half the raw rate is their ceiling; replays need one (none from the warm cache).\n")
	b.WriteString("\n![latency distribution](latency.png)\n")
	b.WriteString("\n## Storms of 100 identical requests\n\n| implementation | duplicate authorizations per storm |\n|---|---|\n")
	fmt.Fprintf(&b, "| idempay | %s |\n| check, then write (GetItem, then PutItem) | %s |\n", get("StormDuplicates/idempay", "duplicates/storm"), get("StormDuplicates/check-then-write", "duplicates/storm"))
	b.WriteString("\n## Sweeper, start-up, size\n\n| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| sweeper: stale records flagged and enqueued /s (10,000 over 32 shards) | %s |\n", get("Sweep", "flagged/s"))
	fmt.Fprintf(&b, "| charge bootstrap: cold first invocation ms / warm ms | %s / %s |\n", get("ColdStart", "cold_ms"), get("ColdStart", "warm_ms"))
	fmt.Fprintf(&b, "| charge bootstrap linux/arm64 stripped, bytes | %s |\n", get("BinarySize", "bytes"))
	if len(lat) > 0 {
		b.WriteString("\n## Latency samples\n\n| path | samples | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|\n")
		for _, s := range lat {
			q := func(p float64) float64 { return s.ms[min(len(s.ms)-1, int(p*float64(len(s.ms))))] }
			fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.1f | %.1f |\n", s.name, len(s.ms), q(0.5), q(0.9), q(0.99), s.ms[len(s.ms)-1])
		}
	}
	return b.String()
}

// chart draws the cumulative latency distribution of every series.
func chart(path string, all []series) error {
	const w, h, left, right, top, bottom = 900, 500, 70, 20, 40, 50
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	maxMS := 1.0
	for _, s := range all {
		maxMS = max(maxMS, s.ms[min(len(s.ms)-1, len(s.ms)*99/100)])
	}
	x := func(ms float64) int { return left + int(min(ms, maxMS)/maxMS*float64(w-left-right)) }
	y := func(frac float64) int { return h - bottom - int(frac*float64(h-top-bottom)) }
	grey := color.RGBA{180, 180, 180, 255}
	line(img, x(0), y(0), x(maxMS), y(0), color.Black)
	line(img, x(0), y(0), x(0), y(1), color.Black)
	for i := 1; i <= 4; i++ {
		line(img, x(0), y(float64(i)/4), x(maxMS), y(float64(i)/4), grey)
		label(img, 10, y(float64(i)/4)+4, fmt.Sprintf("%d%%", i*25), color.Black)
	}
	for i := 0; i <= 5; i++ {
		ms := maxMS * float64(i) / 5
		label(img, x(ms)-10, h-bottom+18, fmt.Sprintf("%.1f", ms), color.Black)
	}
	label(img, w/2-80, h-10, "latency, ms (to the slowest p99)", color.Black)
	label(img, left, 20, "Local API: share of requests answered within x ms", color.Black)
	palette := []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {148, 103, 189, 255}, {255, 127, 14, 255}}
	for i, s := range all {
		c := palette[i%len(palette)]
		px, py := x(0), y(0)
		for j, ms := range s.ms {
			nx, ny := x(ms), y(float64(j+1)/float64(len(s.ms)))
			line(img, px, py, nx, ny, c)
			px, py = nx, ny
		}
		label(img, w-260, top+20+16*i, s.name, c)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.Set(x0, y0, c)
		img.Set(x0, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func label(img *image.RGBA, x, y int, s string, c color.Color) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

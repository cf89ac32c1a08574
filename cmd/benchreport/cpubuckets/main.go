// Command cpubuckets sorts the samples of function CPU profiles into what
// the code was doing: reading the event, strict decoding, the
// fingerprint, the SDK's parts, logging, metrics, tracing, rendering,
// evidence checks, the engine, and the rest. Each sample goes to the
// bucket of its innermost frame that names one (bucketOf), so a
// serialization under the SDK is the SDK's and a write under a log call
// is logging's; a sample with no such frame goes to the runtime.
//
//	go run ./cpubuckets -requests 400 PROFILE...
//
// prints one row per bucket: its CPU in all the profiles, its share, and,
// given -requests, the microseconds per request.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/google/pprof/profile"
)

// A bucket is what the code does, recognised by the functions that do it.
type bucket struct {
	name  string
	frame *regexp.Regexp
}

const idempay = `github\.com/idempotent-payments/idempay/internal/`

// buckets in the order a frame is tried against them; the first that
// matches the innermost matching frame wins.
var buckets = []bucket{
	{"logging", regexp.MustCompile(`^log/slog\.|` + idempay + `obs\.(contextHandler|NewLogger|WithAttrs)`)},
	{"metrics", regexp.MustCompile(idempay + `obs\.`)},
	{"tracing", regexp.MustCompile(`^go\.opentelemetry\.io/|` + idempay + `setup\.(span|trac|Span|Trac)`)},
	{"rendering", regexp.MustCompile(idempay + `httpapi\.(Render|render|marshal)`)},
	{"evidence checks", regexp.MustCompile(idempay + `acquirer\.(carriesAnswer|Check|check|Compare|compare|Disagree|disagree|Evidence|evidence)`)},
	{"strict decoding", regexp.MustCompile(idempay + `(strictjson\.|charge\.ParseRequest|refund\.ParseRequest|capture\.Parse|command\.Parse|acquirer\.(decode|Read))|^github\.com/go-json-experiment/`)},
	{"the fingerprint", regexp.MustCompile(idempay + `idem\.(Canonical|Fingerprint|fingerprint)`)},
	{"HTTP exchanges (net/http: runtime API, DynamoDB, acquirer)", regexp.MustCompile(`^net/http\.|^net/textproto\.`)},
	{"the SDK: signing", regexp.MustCompile(`^github\.com/aws/aws-sdk-go-v2/aws/signer/`)},
	{"the SDK: serialization", regexp.MustCompile(`^github\.com/aws/aws-sdk-go-v2/service/dynamodb\.(awsAwsjson10|\(\*awsAwsjson10)|^github\.com/aws/smithy-go/(encoding|document)/|^github\.com/aws/aws-sdk-go-v2/feature/dynamodb/`)},
	{"the SDK: retries", regexp.MustCompile(`^github\.com/aws/aws-sdk-go-v2/aws/retry`)},
	{"the SDK: other middleware", regexp.MustCompile(`^github\.com/aws/(aws-sdk-go-v2|smithy-go)/`)},
	{"the store's items (internal/dynamo)", regexp.MustCompile(idempay + `dynamo\.`)},
	{"the door (internal/httpapi)", regexp.MustCompile(idempay + `httpapi\.`)},
	{"the engine and the service", regexp.MustCompile(idempay)},
	{"reading the event (aws-lambda-go)", regexp.MustCompile(`^github\.com/aws/aws-lambda-go/`)},
}

const runtimeBucket = "the Go runtime (GC, scheduler, system calls of its own)"

// bucketOf is the bucket of a sample's stack, innermost frame first.
func bucketOf(stack []string) string {
	for _, fn := range stack {
		for _, b := range buckets {
			if b.frame.MatchString(fn) {
				return b.name
			}
		}
	}
	return runtimeBucket
}

func main() {
	requests := flag.Int("requests", 0, "requests the profiles hold, for µs per request")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: cpubuckets [-requests N] PROFILE...")
		os.Exit(2)
	}
	spent := map[string]time.Duration{}
	var total time.Duration
	for _, name := range flag.Args() {
		if err := add(name, spent, &total); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	names := make([]string, 0, len(spent))
	for n := range spent {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(spent[b], spent[a]), cmp.Compare(a, b)) })
	if total == 0 {
		fmt.Fprintln(os.Stderr, "cpubuckets: the profiles hold no samples")
		os.Exit(1)
	}
	fmt.Printf("| what the code does | CPU | share |%s\n|---|---|---|%s\n", perHeader(*requests), perRule(*requests))
	for _, n := range append(names, "total") {
		d := total
		if n != "total" {
			d = spent[n]
		}
		per := ""
		if *requests > 0 {
			per = fmt.Sprintf(" %.0f |", float64(d.Microseconds())/float64(*requests))
		}
		fmt.Printf("| %s | %d ms | %.0f %% |%s\n", n, d.Milliseconds(), 100*float64(d)/float64(total), per)
	}
}

func perHeader(requests int) string {
	if requests > 0 {
		return " µs per request |"
	}
	return ""
}

func perRule(requests int) string {
	if requests > 0 {
		return "---|"
	}
	return ""
}

// add sums the CPU of one profile's samples into spent by bucket.
func add(name string, spent map[string]time.Duration, total *time.Duration) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	cpu := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" && t.Unit == "nanoseconds" })
	if cpu < 0 {
		return fmt.Errorf("%s: not a CPU profile", name)
	}
	for _, s := range p.Sample {
		var stack []string
		for _, loc := range s.Location {
			for _, line := range loc.Line { // innermost inlined call first
				stack = append(stack, line.Function.Name)
			}
		}
		d := time.Duration(s.Value[cpu])
		spent[bucketOf(stack)] += d
		*total += d
	}
	return nil
}

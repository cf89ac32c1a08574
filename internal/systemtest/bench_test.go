package systemtest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/route"
)

// benchClients is how many clients the benchmarks' loads run; the
// comparison with Powertools was measured at issueClients.
const (
	benchClients = 4
	issueClients = 16
)

// load runs n requests from benchClients goroutines and reports requests/s
// and latency percentiles. next(i) makes request i.
func load(b *testing.B, n int, next func(i int) error) {
	b.Helper()
	loadFrom(b, benchClients, n, next)
}

// loadFrom is load from clients goroutines.
func loadFrom(b *testing.B, clients, n int, next func(i int) error) {
	b.Helper()
	lat, elapsed, err := drive(clients, n, next)
	if err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	saveLatencies(b, lat)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99_ms")
	b.ReportMetric(0, "ns/op")
}

// drive makes requests 0 to n-1, next(i) making request i, from clients
// goroutines. It returns each request's latency (by i), the time they all
// took, and the first error.
func drive(clients, n int, next func(i int) error) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var i atomic.Int64
	var failed firstError
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				k := int(i.Add(1)) - 1
				if k >= n {
					return
				}
				t0 := time.Now()
				if err := next(k); err != nil {
					failed.set(err)
				}
				lat[k] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	return lat, time.Since(start), failed.get()
}

// firstError keeps the first error of many goroutines.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// benchStack starts the stack the benchmarks load: on a DynamoDB Local of
// its own, started afresh (freshDynamoDB), a table of its own, two
// instances per function. It returns a token for an account of its own
// and a prefix that keeps this run's keys apart; tune changes the
// configuration before the stack starts.
func benchStack(b *testing.B, name string, tune ...func(*localapi.StackConfig)) (*localapi.Stack, string, string) {
	b.Helper()
	freshDynamoDB(b)
	cfg := localapi.StackConfig{
		RIE: rieBin, BinDir: binDir, TableName: fmt.Sprintf("%s-%d", name, time.Now().UnixNano()),
		GatewayAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", Trust: localapi.Trust{Secret: secret}, Instances: 2,
	}
	for _, f := range tune {
		f(&cfg)
	}
	s, err := localapi.StartStack(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	token, _ := localapi.Trust{Secret: secret}.Token(benchAccount(name), time.Hour)
	return s, token, fmt.Sprint(time.Now().UnixNano())
}

// benchAccount is the account of benchStack's token for the stack name.
func benchAccount(name string) string { return "acct_" + name }

// freshDynamoDB points this process and the functions it starts, for the
// rest of b, at a DynamoDB Local of b's own, started afresh: DynamoDB Local
// keeps every stream record it wrote, and its writes to a table with a
// stream slow as they pile up, so a benchmark run after others on a shared
// one would measure their leftovers.
func freshDynamoDB(b *testing.B) {
	b.Helper()
	_, file, _, _ := runtime.Caller(0)
	db, err := localapi.StartDynamoDBLocal(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Stop)
	b.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://"+db.Addr)
	b.Setenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "http://"+db.Addr)
}

func benchCharge(s *localapi.Stack, token, key string, want ...int) error {
	return chargeAt(s.URL, token, key, want...)
}

// benchChargeID charges body (visa, or visaAuthorization) under key and
// returns the charge's id.
func benchChargeID(s *localapi.Stack, token, key, body string) (string, error) {
	resp, err := benchPost(s.URL+route.ChargesPath, token, key, body, http.StatusCreated)
	return strings.TrimPrefix(resp.Get("Location"), route.ChargesPath+"/"), err
}

// benchCharges charges body n times from benchClients clients, under
// the keys prefix0 to prefix(n-1), and returns the charges' ids in the
// keys' order.
func benchCharges(b *testing.B, s *localapi.Stack, token, prefix string, n int, body string) []string {
	b.Helper()
	ids := make([]string, n)
	closedLoopRate(b, n, func(c int) error {
		id, err := benchChargeID(s, token, fmt.Sprint(prefix, c), body)
		ids[c] = id
		return err
	})
	return ids
}

// visaAuthorization is the visa charge authorized without its capture.
var visaAuthorization = strings.TrimSuffix(visa, "}") + `, "capture": false}`

// benchAct POSTs body to routeKey (route.Refund, route.Capture,
// route.Void) on chargeID under key and wants 201.
func benchAct(s *localapi.Stack, token, routeKey, chargeID, key, body string) error {
	_, err := benchPost(s.URL+route.Path(routeKey, chargeID), token, key, body, http.StatusCreated)
	return err
}

// benchPost POSTs body to url with token and key, wants one of the
// statuses, and returns the answer's headers.
func benchPost(url, token, key, body string, want ...int) (http.Header, error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := benchClient.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if !slices.Contains(want, resp.StatusCode) {
		return resp.Header, fmt.Errorf("key %s: status %d, want %v", key, resp.StatusCode, want)
	}
	return resp.Header, nil
}

// benchClient keeps a connection per load goroutine: with the default two
// idle connections per host, every request of the other goroutines would
// open a connection of its own, and the gateway's CPU would count the
// accepts.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: issueClients}, Timeout: time.Minute}

// chargeAt posts the visa charge under key to the gateway at url and
// wants one of the statuses.
func chargeAt(url, token, key string, want ...int) error {
	_, err := benchPost(url+route.ChargesPath, token, key, visa, want...)
	return err
}

// BenchmarkLocalAPI: the charge API through the gateway, the RIE (two
// instances) and DynamoDB Local, next to DynamoDB Local's raw conditional
// PutItem rate measured in the same run, from benchClients clients. First
// executions need 3 writes (ceiling: a third of the raw rate); replays 1.
func BenchmarkLocalAPI(b *testing.B) { localAPI(b, 2, benchClients) }

// BenchmarkLocalAPIConcurrency16 is BenchmarkLocalAPI at the load the
// comparison with Powertools' idempotency utility was measured at: 16
// clients, and 8 instances.
func BenchmarkLocalAPIConcurrency16(b *testing.B) { localAPI(b, 8, issueClients) }

// localAPI loads a stack of instances per function from clients clients.
func localAPI(b *testing.B, instances, clients int) {
	s, token, run := benchStack(b, "bench", func(c *localapi.StackConfig) { c.Instances = instances })
	load := func(b *testing.B, n int, next func(i int) error) { loadFrom(b, clients, n, next) }

	b.Run("raw-conditional-put", func(b *testing.B) {
		client := dynamotest.Client(b, func(o *dynamodb.Options) { // a connection per client, as benchClient keeps
			o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.MaxIdleConnsPerHost = clients })
		})
		table := dynamotest.NewTable(b, client)
		load(b, b.N, func(i int) error {
			_, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{
				TableName:           aws.String(table),
				Item:                map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("raw-%s-%d", run, i)}},
				ConditionExpression: aws.String("attribute_not_exists(pk)"),
			})
			return err
		})
	})
	b.Run("first-execution", func(b *testing.B) {
		prefix := fmt.Sprintf("first-%s-%d-", run, b.N)
		load(b, b.N, func(i int) error { return benchCharge(s, token, fmt.Sprint(prefix, i), 201) })
	})
	b.Run("replay", func(b *testing.B) {
		key := "replay-" + run
		if err := benchCharge(s, token, key, 201); err != nil {
			b.Fatal(err)
		}
		load(b, b.N, func(int) error { return benchCharge(s, token, key, 201) })
	})
	b.Run("storm-of-20", func(b *testing.B) {
		prefix := fmt.Sprintf("storm-%s-%d-", run, b.N)
		load(b, b.N, func(i int) error { return benchCharge(s, token, fmt.Sprint(prefix, i/20), 201, 409) })
	})
}

// BenchmarkColdStart: the first invocation of a new execution environment
// (the RIE starts the bootstrap, which builds its clients) against a warm one.
func BenchmarkColdStart(b *testing.B) {
	cold, warm := time.Duration(0), time.Duration(0)
	payload := getEvent
	for b.Loop() {
		p, err := localapi.StartPool(localapi.PoolConfig{
			RIE: rieBin, Bootstrap: filepath.Join(binDir, "charge", "bootstrap"), Name: "charge", Instances: 1, Timeout: 10 * time.Second,
			Env: []string{"TABLE_NAME=cold-start", "ACQUIRER_URL=http://127.0.0.1:1", "ACQUIRER_ID=sandbox"},
		})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if _, err := p.Invoke(context.Background(), payload); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := p.Invoke(context.Background(), payload); err != nil {
			b.Fatal(err)
		}
		cold, warm = cold+t1.Sub(t0), warm+time.Since(t1)
		p.Close()
	}
	b.ReportMetric(float64(cold.Microseconds())/1000/float64(b.N), "cold_ms")
	b.ReportMetric(float64(warm.Microseconds())/1000/float64(b.N), "warm_ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkBinarySize reports the charge bootstrap as deployed: linux/arm64,
// stripped, built as `make build` builds it.
func BenchmarkBinarySize(b *testing.B) {
	out := filepath.Join(b.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, "../../functions/charge")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, msg)
	}
	fi, err := os.Stat(out)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
	}
	b.ReportMetric(float64(fi.Size()), "bytes")
	b.ReportMetric(0, "ns/op")
}

// saveLatencies writes the sorted latencies (ms, one a line) under
// $BENCH_RESULTS for the report's chart (make bench sets it).
func saveLatencies(b *testing.B, lat []time.Duration) {
	dir := os.Getenv("BENCH_RESULTS")
	if dir == "" {
		return
	}
	var buf strings.Builder
	for _, d := range lat {
		fmt.Fprintf(&buf, "%.3f\n", float64(d.Microseconds())/1000)
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(b.Name())
	if err := os.WriteFile(filepath.Join(dir, "latency-"+name+".txt"), []byte(buf.String()), 0o644); err != nil {
		b.Log(err)
	}
}

// getEvent is an API Gateway event for GET /v1/charges/ch_x: an invocation
// the function answers (with an error answer) even with no table or
// acquirer behind it.
var getEvent = []byte(`{"version":"2.0","routeKey":"GET /v1/charges/{id}","rawPath":"/v1/charges/ch_x","pathParameters":{"id":"ch_x"},"requestContext":{"authorizer":{"jwt":{"claims":{"sub":"a"}}},"http":{"method":"GET"}}}`)

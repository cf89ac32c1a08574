package systemtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// checkThenWrite is the endpoint as many tutorials write it: GetItem the
// key; if absent, charge, then PutItem the response. Two concurrent
// requests both read "absent" and both charge (CWE-367). It is here only to
// be measured against the real thing.
type checkThenWrite struct {
	db    *dynamodb.Client
	table string
	acq   *acquirerhttp.Client
	n     int64
	mu    sync.Mutex
}

func (h *checkThenWrite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "NAIVE#" + r.Header.Get("Idempotency-Key")}}
	got, err := h.db.GetItem(r.Context(), &dynamodb.GetItemInput{TableName: aws.String(h.table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	if body, ok := got.Item["response"].(*types.AttributeValueMemberS); ok {
		w.WriteHeader(201)
		_, _ = w.Write([]byte(body.Value))
		return
	}
	h.mu.Lock()
	h.n++
	attemptKey := fmt.Sprintf("naive-%d", h.n) // no downstream idempotency key
	h.mu.Unlock()
	auth, err := h.acq.Authorize(r.Context(), attemptKey, acquirer.Request{Amount: 25000, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "123"})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	body, _ := json.Marshal(auth)
	item := map[string]types.AttributeValue{"pk": key["pk"], "response": &types.AttributeValueMemberS{Value: string(body)}}
	if _, err := h.db.PutItem(r.Context(), &dynamodb.PutItemInput{TableName: aws.String(h.table), Item: item}); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.WriteHeader(201)
	_, _ = w.Write(body)
}

// storm sends 100 identical requests at once to url and returns the
// duplicate authorizations it caused at sb.
func storm(b *testing.B, url, token, key string, sb *sandbox.Server) int {
	before := len(sb.Authorizations())
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, url+"/v1/charges", strings.NewReader(visa))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Idempotency-Key", key)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return max(0, len(sb.Authorizations())-before-1)
}

// BenchmarkStormDuplicates: storms of 100 identical requests, against this
// project's API and against check-then-write on the same DynamoDB Local and
// sandbox acquirer. Reports duplicate authorizations per storm.
func BenchmarkStormDuplicates(b *testing.B) {
	b.Run("idempay", func(b *testing.B) {
		s, err := localapi.StartStack(context.Background(), localapi.StackConfig{
			RIE: rieBin, BinDir: binDir, TableName: fmt.Sprintf("storm-%d", time.Now().UnixNano()),
			GatewayAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", Trust: localapi.Trust{Secret: secret}, Instances: 2, SweepInterval: -1,
		})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		s.Sandbox.SetFaults(sandbox.Faults{LatencyMS: 50})
		token, _ := localapi.Trust{Secret: secret}.Token("acct_storm", time.Hour)
		dups := 0
		for i := 0; b.Loop(); i++ {
			dups += storm(b, s.URL, token, fmt.Sprintf("storm-%d-%d", time.Now().UnixNano(), i), s.Sandbox)
		}
		b.ReportMetric(float64(dups)/float64(b.N), "duplicates/storm")
		b.ReportMetric(0, "ns/op")
	})
	b.Run("check-then-write", func(b *testing.B) {
		client := dynamotest.Client(b)
		sb := sandbox.New("")
		sb.SetFaults(sandbox.Faults{LatencyMS: 50})
		acqSrv := httptest.NewServer(sb)
		defer acqSrv.Close()
		acq, _ := acquirerhttp.NewClient(acqSrv.URL, "", nil)
		api := httptest.NewServer(&checkThenWrite{db: client, table: dynamotest.NewTable(b, client), acq: acq})
		defer api.Close()
		dups := 0
		for i := 0; b.Loop(); i++ {
			dups += storm(b, api.URL, "", fmt.Sprintf("naive-storm-%d-%d", time.Now().UnixNano(), i), sb)
		}
		b.ReportMetric(float64(dups)/float64(b.N), "duplicates/storm")
		b.ReportMetric(0, "ns/op")
	})
}

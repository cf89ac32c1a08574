package systemtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/route"
)

// One test per row of DESIGN §3's table, over HTTP through the local gateway
// to the real bootstrap under the RIE, DynamoDB Local and the sandbox.

// recordStatus reads the idempotency record of (account, key) straight from
// the table: "" when absent.
func recordStatus(t *testing.T, s *localapi.Stack, account, key string) (status string, attempt string) {
	t.Helper()
	pk := idem.Scope{Operation: "charge", Account: account, Key: key}.PK()
	out, err := s.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(s.TableName), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		return "", ""
	}
	st, _ := out.Item["status"].(*types.AttributeValueMemberS)
	at, _ := out.Item["attempt"].(*types.AttributeValueMemberN)
	return st.Value, at.Value
}

func authorizations(s *localapi.Stack) int { return len(s.Sandbox.Authorizations()) }

func TestMissingKey(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	expect(t, postCharge(t, s, "acct_a", "", visa), 400, "IDEMPOTENCY_KEY_MISSING")
	if n := items(t, s); n != 0 || authorizations(s) != 0 {
		t.Fatalf("%d items, %d authorizations after a rejected request", n, authorizations(s))
	}
}

func TestInvalidKey(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for _, key := range []string{"short", strings.Repeat("k", 129), "clé-de-commande", "has a space", `"unbalanced-key`, `"bad\escape-key"`} {
		expect(t, postCharge(t, s, "acct_a", key, visa), 400, "IDEMPOTENCY_KEY_INVALID")
	}
	if n := items(t, s); n != 0 || authorizations(s) != 0 {
		t.Fatalf("%d items, %d authorizations after rejected requests", n, authorizations(s))
	}
}

func TestInvalidBody(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for body, field := range map[string]string{
		`{"amount": 25000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa", "tip": 5}`: "tip",
		`{"amount": -1, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`:              "amount",
		`{"amount": 10.5, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`:            "amount",
		`{"amount": 100, "currency": "XXX", "order_id": "1", "payment_method": "pm_card_visa"}`:             "currency",
		`{"amount": 100, "currency": "BRL", "payment_method": "pm_card_visa"}`:                              "order_id",
		`{"amount": "100", "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`:           "amount",
		`not json`: "body",
		`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa", "description": "` + strings.Repeat("x", 17000) + `"}`: "body",
	} {
		r := postCharge(t, s, "acct_a", "body-invalid-key", body)
		expect(t, r, 400, "VALIDATION_FAILED")
		errs, _ := r.problem["errors"].([]any)
		if len(errs) == 0 || errs[0].(map[string]any)["field"] != field {
			t.Fatalf("body %.60q: errors %v, want field %q first", body, r.problem["errors"], field)
		}
	}
	if n := items(t, s); n != 0 || authorizations(s) != 0 {
		t.Fatalf("%d items, %d authorizations after rejected bodies", n, authorizations(s))
	}
}

func TestCapturedThenReplayedByteForByte(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	first := postCharge(t, s, "acct_a", "order-123-attempt", visa)
	if first.status != http.StatusCreated || first.header.Get("Idempotent-Replay") != "" {
		t.Fatalf("first: %d %s %v", first.status, first.body, first.header)
	}
	var ch map[string]any
	if err := json.Unmarshal(first.body, &ch); err != nil || ch["status"] != "captured" || ch["amount"] != 25000.0 || ch["currency"] != "BRL" {
		t.Fatalf("charge body %s: %v", first.body, err)
	}
	if loc := first.header.Get("Location"); loc != "/v1/charges/"+ch["id"].(string) {
		t.Fatalf("Location = %q, id %v", loc, ch["id"])
	}
	if st, _ := recordStatus(t, s, "acct_a", "order-123-attempt"); st != "COMPLETED" {
		t.Fatalf("record status %q", st)
	}
	// Same request, other key order and white space, and the quoted key form.
	sameReq := `{ "payment_method":"pm_card_visa", "order_id":"123",
		"currency":"BRL", "amount":25000 }`
	for _, key := range []string{"order-123-attempt", `"order-123-attempt"`} {
		again := postCharge(t, s, "acct_a", key, sameReq)
		if again.status != first.status || string(again.body) != string(first.body) ||
			again.header.Get("Location") != first.header.Get("Location") || again.header.Get("Idempotent-Replay") != "true" {
			t.Fatalf("replay with key %s: %d %s %v", key, again.status, again.body, again.header)
		}
	}
	if n := authorizations(s); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
	got := call(t, s, http.MethodGet, first.header.Get("Location"), "acct_a", nil, "")
	if want := strings.TrimSuffix(string(first.body), "}") + `,"amount_captured":25000,"amount_capturable":0,"amount_refunded":0}`; got.status != 200 || string(got.body) != want {
		t.Fatalf("GET own charge: %d %s, want the 201 body with its figures", got.status, got.body)
	}
}

func TestDeclinedIsStored(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	body := `{"amount": 5000, "currency": "USD", "order_id": "9", "payment_method": "pm_card_declined"}`
	first := postCharge(t, s, "acct_a", "declined-key-1", body)
	expect(t, first, 402, "CHARGE_DECLINED")
	if first.problem["decline_code"] != "card_declined" || !strings.HasPrefix(first.problem["charge_id"].(string), "ch_") {
		t.Fatalf("decline body: %s", first.body)
	}
	again := postCharge(t, s, "acct_a", "declined-key-1", body)
	if again.status != 402 || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("replayed decline: %d %s", again.status, again.body)
	}
	if n := authorizations(s); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
	got := call(t, s, http.MethodGet, "/v1/charges/"+first.problem["charge_id"].(string), "acct_a", nil, "")
	if got.status != 200 || !strings.Contains(string(got.body), `"status":"declined"`) {
		t.Fatalf("GET declined charge: %d %s", got.status, got.body)
	}
}

func TestInFlight(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	setFaults(t, s, `{"latency_ms": 1500}`)
	done := make(chan reply)
	go func() { done <- postCharge(t, s, "acct_a", "in-flight-key", visa) }()
	time.Sleep(400 * time.Millisecond)
	second := postCharge(t, s, "acct_a", "in-flight-key", visa)
	expect(t, second, 409, "IDEMPOTENCY_IN_FLIGHT")
	if ra := second.header.Get("Retry-After"); ra != "2" {
		t.Fatalf("Retry-After = %q, want 2 (the lease's time left, capped at 2 s)", ra)
	}
	if first := <-done; first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	if r := postCharge(t, s, "acct_a", "in-flight-key", visa); r.status != 201 || r.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("retry after the owner finished: %d", r.status)
	}
}

func TestKeyReused(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	if r := postCharge(t, s, "acct_a", "reused-key-1", visa); r.status != 201 {
		t.Fatalf("first: %d", r.status)
	}
	other := `{"amount": 99, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}`
	r := postCharge(t, s, "acct_a", "reused-key-1", other)
	expect(t, r, 422, "IDEMPOTENCY_KEY_REUSED")
	if strings.Contains(string(r.body), "captured") || authorizations(s) != 1 {
		t.Fatalf("reused key leaked the old response or charged: %s, %d authorizations", r.body, authorizations(s))
	}
}

func TestAcquirerUnavailableReleasesTheKey(t *testing.T) {
	t.Parallel()
	s := newStack(t, "ACQUIRER_URL=http://127.0.0.1:1") // nothing listens on port 1
	r := postCharge(t, s, "acct_a", "unavailable-key", visa)
	expect(t, r, 503, "ACQUIRER_UNAVAILABLE")
	if r.header.Get("Retry-After") != "2" {
		t.Fatalf("Retry-After = %q", r.header.Get("Retry-After"))
	}
	if st, _ := recordStatus(t, s, "acct_a", "unavailable-key"); st != "" {
		t.Fatalf("record %q left behind; want the key released", st)
	}
}

func TestUnavailableAfterTakeOverStaysInFlight(t *testing.T) {
	t.Parallel()
	s := newStack(t, "ACQUIRER_TIMEOUT=500ms", "IN_TRANSIT_BOUND=2s")
	setFaults(t, s, `{"error_rate": 1}`)
	expect(t, postCharge(t, s, "acct_a", "takeover-refused", visa), 503, "CHARGE_OUTCOME_PENDING")
	s.StopSandbox()
	r := postCharge(t, s, "acct_a", "takeover-refused", visa)
	expect(t, r, 503, "CHARGE_OUTCOME_PENDING")
	if st, attempt := recordStatus(t, s, "acct_a", "takeover-refused"); st != "IN_PROGRESS" || attempt != "2" {
		t.Fatalf("record %s attempt %s; want IN_PROGRESS after the take-over (never released)", st, attempt)
	}
}

// TestOutcomeUnknown: each fault that leaves the outcome unknown answers
// 503 CHARGE_OUTCOME_PENDING and keeps the key in flight; the retry takes
// over, asks the acquirer and answers with the real outcome, charging once.
func TestOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for name, faults := range map[string]string{
		"timeout": `{"hang_rate": 1, "hang_ms": 1000}`,
		"5xx":     `{"error_rate": 1}`,
		"dropped": `{"drop_rate": 1}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, "ACQUIRER_TIMEOUT=500ms", "IN_TRANSIT_BOUND=2s")
			setFaults(t, s, faults)
			r := postCharge(t, s, "acct_a", "unknown-"+name, visa)
			expect(t, r, 503, "CHARGE_OUTCOME_PENDING")
			if r.header.Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
			if st, _ := recordStatus(t, s, "acct_a", "unknown-"+name); st != "IN_PROGRESS" {
				t.Fatalf("record %q, want IN_PROGRESS", st)
			}
			setFaults(t, s, `{}`)
			time.Sleep(1200 * time.Millisecond) // a hung request lands meanwhile
			retry := postCharge(t, s, "acct_a", "unknown-"+name, visa)
			if retry.status != 201 {
				t.Fatalf("retry: %d %s", retry.status, retry.body)
			}
			if n := authorizations(s); n != 1 {
				t.Fatalf("%d authorizations, want 1", n)
			}
			if st, attempt := recordStatus(t, s, "acct_a", "unknown-"+name); st != "COMPLETED" || attempt != "2" {
				t.Fatalf("record %s attempt %s, want COMPLETED by the take-over", st, attempt)
			}
		})
	}
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	a := postCharge(t, s, "acct_a", "shared-key-1", visa)
	b := postCharge(t, s, "acct_b", "shared-key-1", `{"amount": 777, "currency": "EUR", "order_id": "b", "payment_method": "pm_card_visa"}`)
	if a.status != 201 || b.status != 201 || string(a.body) == string(b.body) {
		t.Fatalf("two accounts, one key: %d %s / %d %s", a.status, a.body, b.status, b.body)
	}
	if n := authorizations(s); n != 2 {
		t.Fatalf("%d authorizations, want 2", n)
	}
	if r := call(t, s, http.MethodGet, b.header.Get("Location"), "acct_a", nil, ""); r.status != 404 {
		t.Fatalf("acct_a read acct_b's charge: %d %s", r.status, r.body)
	}
	if r := postCharge(t, s, "acct_a", "shared-key-1", visa); string(r.body) != string(a.body) {
		t.Fatalf("acct_a's replay is not its own: %s", r.body)
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	if r := postCharge(t, s, "", "auth-key-123", visa); r.status != 401 {
		t.Fatalf("no token: %d", r.status)
	}
	r := call(t, s, http.MethodPost, "/v1/charges", "", map[string]string{"Authorization": "Bearer not-a-jwt", "Idempotency-Key": "auth-key-123"}, visa)
	if r.status != 401 || items(t, s) != 0 {
		t.Fatalf("bad token: %d, %d items", r.status, items(t, s))
	}
	if r := call(t, s, http.MethodGet, "/v1/charges/ch_0000000000000000000000000000000000000000", "acct_a", nil, ""); r.status != 404 {
		t.Fatalf("unknown charge: %d", r.status)
	}
}

// TestStorm: 100 identical requests at once through two instances: one
// authorization; every answer the stored one or 409; retries converge.
func TestStorm(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	setFaults(t, s, `{"latency_ms": 200}`)
	replies := make([]reply, 100)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Go(func() { replies[i] = postCharge(t, s, "acct_storm", "storm-key-1", visa) })
	}
	wg.Wait()
	var stored []byte
	for i, r := range replies {
		switch r.status {
		case 201:
			if stored != nil && string(stored) != string(r.body) {
				t.Fatalf("reply %d differs: %s vs %s", i, r.body, stored)
			}
			stored = r.body
		case 409:
		default:
			t.Fatalf("reply %d: %d %s", i, r.status, r.body)
		}
	}
	for i, r := range replies {
		for r.status == 409 {
			time.Sleep(100 * time.Millisecond)
			r = postCharge(t, s, "acct_storm", "storm-key-1", visa)
		}
		if r.status != 201 || (stored != nil && string(r.body) != string(stored)) {
			t.Fatalf("retry of %d: %d %s", i, r.status, r.body)
		}
		stored = r.body
	}
	if n := authorizations(s); n != 1 {
		t.Fatalf("%d authorizations for one intent, want 1", n)
	}
}

// TestLookupByKey over the stack: GET /v1/charges?idempotency_key=K
// through the gateway, the function under the RIE and DynamoDB Local
// answers the account's own charge for K, byte for byte its GET, a key
// holding &, +, %, = and a comma included (sent quoted in the header,
// percent-encoded in the query); another account's key is 404, a
// repeated parameter 400; a key in flight is 409 as for POST; nothing
// the lookups answer writes an item.
func TestLookupByKey(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for header, query := range map[string]string{
		"lookup-key-1":   "lookup-key-1",
		`"a&b+c%d=e,f"`:  "a%26b+c%25d%3De%2Cf",
		`"g,h&i=j%2Bkl"`: "g%2Ch%26i%3Dj%252Bkl",
	} {
		created := postCharge(t, s, "acct_look", header, visa)
		if created.status != 201 {
			t.Fatalf("POST %s: %d %s", header, created.status, created.body)
		}
		got := call(t, s, http.MethodGet, route.ChargesPath+"?"+route.LookupParameter+"="+query, "acct_look", nil, "")
		byID := call(t, s, http.MethodGet, created.header.Get("Location"), "acct_look", nil, "")
		if got.status != 200 || string(got.body) != string(byID.body) {
			t.Errorf("lookup of %s as %s: %d %s, want its charge %s", header, query, got.status, got.body, byID.body)
		}
	}
	before := items(t, s)
	for path, want := range map[string]int{
		route.ChargesPath + "?idempotency_key=lookup-key-1":                              404, // another account's key
		route.ChargesPath + "?idempotency_key=lookup-key-1&idempotency_key=lookup-key-1": 400,
		route.ChargesPath: 400,
	} {
		if r := call(t, s, http.MethodGet, path, "acct_other", nil, ""); r.status != want {
			t.Errorf("%s: %d %s, want %d", path, r.status, r.body, want)
		}
	}
	setFaults(t, s, `{"latency_ms": 1500}`)
	done := make(chan reply, 1)
	go func() { done <- postCharge(t, s, "acct_look", "lookup-in-flight", visa) }()
	time.Sleep(500 * time.Millisecond)
	if r := call(t, s, http.MethodGet, route.ChargesPath+"?idempotency_key=lookup-in-flight", "acct_look", nil, ""); r.status != 409 || r.header.Get("Retry-After") == "" {
		t.Errorf("in flight: %d %s, want 409 with Retry-After", r.status, r.body)
	}
	if r := <-done; r.status != 201 {
		t.Fatalf("the slow charge: %d %s", r.status, r.body)
	}
	if n := items(t, s); n != before+2 { // the slow charge's record and row
		t.Errorf("%d items after the lookups, want %d", n, before+2)
	}
}

// TestHealthRoute: on the local stack, GET /health needs no token, reads
// the table once, answers 200 with an empty body, and writes nothing.
func TestHealthRoute(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	resp, err := http.Get(s.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Fatalf("GET /health: %d %q", resp.StatusCode, body)
	}
	if n := items(t, s); n != 0 {
		t.Fatalf("the health check wrote %d items", n)
	}
}

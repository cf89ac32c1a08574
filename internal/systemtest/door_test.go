package systemtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

// doorCase is one input to the charge door: the key values as they arrive
// (one per header line; nil when absent) and the request body.
type doorCase struct {
	name string
	keys []string
	body string
	// code is the refusal both entry points must give ("" = accepted).
	code string
	// httpOnly says why the queue cannot carry this input at all.
	httpOnly string
}

const doorMaxAmount = 5000

// doorCases are the inputs that could mean two things, each refused (or
// accepted) for the same reason on both paths. The functions run with
// MAX_AMOUNT=5000.
func doorCases() []doorCase {
	const rest = `"currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"`
	k := []string{"door-key-0001"}
	return []doorCase{
		{name: "valid", keys: k, body: `{"amount": 100, ` + rest + `}`},
		{name: "amount at MAX_AMOUNT", keys: k, body: fmt.Sprintf(`{"amount": %d, `+rest+`}`, doorMaxAmount)},
		{name: "amount over MAX_AMOUNT", keys: k, body: fmt.Sprintf(`{"amount": %d, `+rest+`}`, doorMaxAmount+1), code: "VALIDATION_FAILED"},
		{name: "no key", keys: nil, body: `{"amount": 100, ` + rest + `}`, code: "IDEMPOTENCY_KEY_MISSING"},
		// The queue carries one key member; the joined value is what a
		// producer that concatenates, or API Gateway, would pass on.
		{name: "key sent twice", keys: []string{"order-1-try1", "order-1-try1"}, body: `{"amount": 100, ` + rest + `}`, code: "IDEMPOTENCY_KEY_INVALID"},
		{name: "bare key with a comma", keys: []string{"order-1-try1,order-1-try1"}, body: `{"amount": 100, ` + rest + `}`, code: "IDEMPOTENCY_KEY_INVALID"},
		{name: "short key", keys: []string{"short"}, body: `{"amount": 100, ` + rest + `}`, code: "IDEMPOTENCY_KEY_INVALID"},
		{name: "duplicate amount", keys: k, body: `{"amount": 100, ` + rest + `, "amount": 4999}`, code: "VALIDATION_FAILED"},
		{name: "case-variant amount", keys: k, body: `{"amount": 100, "AMOUNT": 4999, ` + rest + `}`, code: "VALIDATION_FAILED"},
		{name: "case-variant payment method", keys: k, body: `{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_declined", "Payment_Method": "pm_card_visa"}`, code: "VALIDATION_FAILED"},
		{name: "unknown member", keys: k, body: `{"amount": 100, ` + rest + `, "tip": 5}`, code: "VALIDATION_FAILED"},
		{name: "trailing value", keys: k, body: `{"amount": 100, ` + rest + `} {}`, code: "VALIDATION_FAILED",
			httpOnly: "command.Encode refuses a request that is not one JSON value"},
		{name: "lone surrogate", keys: k, body: `{"amount": 100, "currency": "BRL", "order_id": "\ud800", "payment_method": "pm_card_visa"}`, code: "VALIDATION_FAILED"},
		{name: "invalid UTF-8", keys: k, body: "{\"amount\": 100, \"currency\": \"BRL\", \"order_id\": \"1\xff\", \"payment_method\": \"pm_card_visa\"}", code: "VALIDATION_FAILED",
			httpOnly: "SQS refuses a message body that is not valid UTF-8"},
		{name: "zero-width space in order_id", keys: k, body: `{"amount": 100, "currency": "BRL", "order_id": "1\u200b", "payment_method": "pm_card_visa"}`, code: "VALIDATION_FAILED"},
		{name: "right-to-left override in payment_method", keys: k, body: `{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa\u202e"}`, code: "VALIDATION_FAILED"},
		{name: "right-to-left override in description", keys: k, body: `{"amount": 100, ` + rest + `, "description": "a\u202eb"}`, code: "VALIDATION_FAILED"},
		// Not well-formed JSON: the queue's producer wrote the envelope by
		// hand (command.Encode refuses such a request).
		{name: "not JSON", keys: k, body: `{not json}`, code: "VALIDATION_FAILED"},
		{name: "trailing comma", keys: k, body: `{"amount": 100, ` + rest + `,}`, code: "VALIDATION_FAILED"},
		{name: "leading zero", keys: k, body: `{"amount": 01, ` + rest + `}`, code: "VALIDATION_FAILED"},
	}
}

// TestOneDoorBothEntryPoints runs every input through the HTTP route and
// as a charge command: the same outcome on both, and nothing written for a
// refusal — no record, no authorization.
func TestOneDoorBothEntryPoints(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, localapi.StackConfig{NoEventSourceMapping: true, Env: []string{fmt.Sprintf("MAX_AMOUNT=%d", doorMaxAmount)}})
	token, err := localapi.Trust{Secret: secret}.Token("acct_door", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	var batch events.SQSEvent
	want := map[string]doorCase{} // by message id
	for i, tc := range doorCases() {
		// Each accepted case and each path has its own key, so each executes.
		keys := tc.keys
		if tc.code == "" {
			keys = []string{fmt.Sprintf("door-http-%04d", i)}
			accepted++
		}
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/charges", bytes.NewReader([]byte(tc.body)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for _, k := range keys {
			req.Header.Add("Idempotency-Key", k)
		}
		r := do(t, req)
		switch {
		case tc.code == "" && r.status != 201:
			t.Errorf("%s over HTTP: %d %s, want 201", tc.name, r.status, r.body)
		case tc.code != "" && r.code() != tc.code:
			t.Errorf("%s over HTTP: %d %s, want %s", tc.name, r.status, r.body, tc.code)
		}
		if tc.httpOnly != "" {
			continue
		}
		key := strings.Join(keys, ",")
		if tc.code == "" {
			key = fmt.Sprintf("door-sqs-%04d", i)
			accepted++
		}
		body, err := command.Charge("acct_door", key, []byte(tc.body)).Encode()
		if err != nil { // not one JSON value: a producer's own envelope
			body = `{"type":"charge","account":"acct_door","idempotency_key":"` + key + `","request":` + tc.body + `}`
		}
		id := fmt.Sprintf("door-message-%02d", i)
		want[id] = tc
		batch.Records = append(batch.Records, events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body, EventSource: "aws:sqs", EventSourceARN: s.QueueARN})
	}
	deliverAllDone(t, s, batch, "every message is final, none retried")
	refused := 0
	for _, tc := range want {
		if tc.code != "" {
			refused++
		}
	}
	dead := receiveAll(t, s, s.RejectedURL, refused, 10*time.Second)
	got := map[string]string{}
	for _, m := range dead {
		id := aws.ToString(m.MessageAttributes["source_message_id"].StringValue)
		got[id] = aws.ToString(m.MessageAttributes["reject_code"].StringValue)
		if aws.ToString(m.MessageAttributes["reject_reason"].StringValue) == "" {
			t.Errorf("%s dead-lettered without a reason", want[id].name)
		}
	}
	for id, tc := range want {
		if got[id] != tc.code {
			t.Errorf("%s as a command: reject code %q, want %q", tc.name, got[id], tc.code)
		}
	}
	if n := authorizations(s); n != accepted {
		t.Errorf("%d authorizations, want %d (one per accepted input and path)", n, accepted)
	}
	if n := items(t, s); n != 2*accepted {
		t.Errorf("%d items, want %d: a record and a ledger row per accepted input, nothing for a refusal", n, 2*accepted)
	}
}

// TestDefectsRefusedOverTheStack replays each door case against the
// stack `make run` serves: each is a refusal with the right status and
// code, and the sandbox's authorization list is unchanged afterwards.
// The two paths' limits are TestOneDoorBothEntryPoints'; warnings without
// request and record are the log scan's, in TestMain.
func TestDefectsRefusedOverTheStack(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	token, err := localapi.Trust{Secret: secret}.Token("acct_defects", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	post := func(headers http.Header, body string) reply {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/charges", strings.NewReader(body))
		req.Header = headers.Clone()
		if req.Header.Get("Authorization") == "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return do(t, req)
	}
	headers := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	jsonKey := func(key string) http.Header {
		return headers("Content-Type", "application/json", "Idempotency-Key", key)
	}
	const rest = `"currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"`
	body := `{"amount": 100, ` + rest + `}`

	// 1. A repeated Idempotency-Key header is not a new key.
	expect(t, post(headers("Content-Type", "application/json", "Idempotency-Key", "order-1-try1", "Idempotency-Key", "order-1-try1"), body), 400, "IDEMPOTENCY_KEY_INVALID")
	// 2. Duplicate and case-variant member names; the queue's envelope.
	for _, b := range []string{
		`{"amount": 100, "AMOUNT": 99999999, ` + rest + `}`,
		`{"amount": 100, ` + rest + `, "amount": 99999999}`,
		`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_declined", "Payment_Method": "pm_card_visa"}`,
	} {
		expect(t, post(jsonKey("defect-2-key"), b), 400, "VALIDATION_FAILED")
	}
	dup, _ := command.Charge("acct_victim", "defect-2-sqs-key", []byte(body)).Encode()
	send(t, s, strings.Replace(dup, `"account":"acct_victim"`, `"account":"acct_victim","account":"acct_other"`, 1))
	caseVariant, _ := command.Charge("acct_victim", "defect-2-sqs-key", []byte(body)).Encode()
	send(t, s, strings.Replace(caseVariant, `"account":"acct_victim"`, `"account":"acct_victim","Account":"acct_other"`, 1))
	unknown, _ := command.Charge("acct_victim", "defect-2-sqs-key", []byte(body)).Encode()
	send(t, s, strings.Replace(unknown, `"type":"charge"`, `"type":"charge","priority":"high"`, 1))
	dead := receiveAll(t, s, s.RejectedURL, 3, 20*time.Second)
	if len(dead) != 3 {
		t.Fatalf("%d of 3 bad envelopes dead-lettered", len(dead))
	}
	for _, m := range dead {
		if code := aws.ToString(m.MessageAttributes["reject_code"].StringValue); code != "MALFORMED" {
			t.Errorf("envelope %s: reject code %q, want MALFORMED", aws.ToString(m.Body), code)
		}
	}
	// 3. Invalid UTF-8 and a lone surrogate are refused, not rewritten.
	expect(t, post(jsonKey("defect-3-key"), "{\"amount\": 100, \"currency\": \"BRL\", \"order_id\": \"1\xff\", \"payment_method\": \"pm_card_visa\"}"), 400, "VALIDATION_FAILED")
	expect(t, post(jsonKey("defect-3-key"), `{"amount": 100, "currency": "BRL", "order_id": "\ud800", "payment_method": "pm_card_visa"}`), 400, "VALIDATION_FAILED")
	// 4. Invisible format characters in ids.
	expect(t, post(jsonKey("defect-4-key"), `{"amount": 100, "currency": "BRL", "order_id": "1\u200b", "payment_method": "pm_card_visa"}`), 400, "VALIDATION_FAILED")
	expect(t, post(jsonKey("defect-4-key"), `{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_\u202evisa"}`), 400, "VALIDATION_FAILED")
	// 5. Media types and encodings.
	for _, h := range []http.Header{
		headers("Content-Type", "text/plain", "Idempotency-Key", "defect-5-key"),
		headers("Content-Type", "application/x-www-form-urlencoded", "Idempotency-Key", "defect-5-key"),
		headers("Idempotency-Key", "defect-5-key"),
		headers("Content-Type", "application/json", "Content-Encoding", "gzip", "Idempotency-Key", "defect-5-key"),
	} {
		r := post(h, body)
		expect(t, r, 415, "UNSUPPORTED_MEDIA_TYPE")
		if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("415 as %q", ct)
		}
	}
	// 7. Tokens the deployed authorizer would refuse; subs that would name
	// one account twice.
	now := time.Now()
	for name, claims := range map[string]jwt.MapClaims{
		"wrong issuer":   {"iss": "https://evil.example/"},
		"wrong audience": {"aud": "other-api"},
		"future iat":     {"iat": now.Add(time.Hour).Unix()},
		"numeric sub":    {"sub": json.Number("9007199254740993")},
		"rounded sub":    {"sub": json.Number("9007199254740992")},
		"fraction sub":   {"sub": 1.6},
	} {
		c := jwt.MapClaims{"sub": "acct_defects", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "iss": localapi.DefaultIssuer, "aud": localapi.DefaultAudience}
		for k, v := range claims {
			c[k] = v
		}
		tok, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
		if r := post(headers("Authorization", "Bearer "+tok, "Content-Type", "application/json", "Idempotency-Key", "defect-7-key"), body); r.status != 401 {
			t.Errorf("token with %s: %d %s, want 401", name, r.status, r.body)
		}
	}
	crit := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "acct_defects", "exp": now.Add(time.Hour).Unix(), "iss": localapi.DefaultIssuer, "aud": localapi.DefaultAudience})
	crit.Header["crit"] = []string{"b64"}
	critToken, _ := crit.SignedString(secret)
	if r := post(headers("Authorization", "Bearer "+critToken, "Content-Type", "application/json", "Idempotency-Key", "defect-7-key"), body); r.status != 401 {
		t.Errorf("token with a crit header: %d, want 401", r.status)
	}

	if n := authorizations(s); n != 0 {
		t.Fatalf("%d authorizations after refusals only", n)
	}
	if n := items(t, s); n != 0 {
		t.Fatalf("%d items after refusals only", n)
	}
	// What still works: the charset parameter and the quoted key form.
	first := post(headers("Content-Type", "application/json; charset=utf-8", "Idempotency-Key", `"defects-ok-1"`), body)
	again := post(headers("Content-Type", "application/json; charset=UTF-8", "Idempotency-Key", "defects-ok-1"), body)
	if first.status != 201 || again.status != 201 || again.header.Get("Idempotent-Replay") != "true" || string(again.body) != string(first.body) {
		t.Fatalf("valid request: %d %s, then %d %s", first.status, first.body, again.status, again.body)
	}
	if n := authorizations(s); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
}

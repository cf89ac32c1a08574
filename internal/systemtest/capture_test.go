package systemtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/route"
)

// authorizationOf authorizes amount BRL without its capture as account
// and returns the charge's id.
func authorizationOf(t *testing.T, s *localapi.Stack, account, key string, amount int64) string {
	t.Helper()
	r := postCharge(t, s, account, key, fmt.Sprintf(`{"amount": %d, "currency": "BRL", "order_id": "c-1", "payment_method": "pm_card_visa", "capture": false}`, amount))
	expect(t, r, 201, "")
	return strings.TrimPrefix(r.header.Get("Location"), route.ChargesPath+"/")
}

// postAction POSTs body to the charge's captures (route.Capture) or void
// (route.Void) as account, with key as its Idempotency-Key ("" sends
// none).
func postAction(t *testing.T, s *localapi.Stack, routeKey, account, key, chargeID, body string) reply {
	t.Helper()
	headers := map[string]string{}
	if key != "" {
		headers["Idempotency-Key"] = key
	}
	path := route.ChargesPath + "/" + chargeID + "/captures"
	if routeKey == route.Void {
		path = route.ChargesPath + "/" + chargeID + "/void"
	}
	return call(t, s, http.MethodPost, path, account, headers, body)
}

// actionRecord is the key's record in operation, nil when it has none.
func actionRecord(t *testing.T, s *localapi.Stack, operation, account, key string) *idem.Record {
	t.Helper()
	rec, err := dynamo.Open(s.DynamoDB, s.TableName).Store().Get(context.Background(), idem.Scope{Operation: operation, Account: account, Key: key}.PK(), time.Now())
	if err != nil {
		return nil
	}
	return rec
}

// figures are a charge's GET's status and amounts.
type figures struct {
	Status     string `json:"status"`
	Captured   int64  `json:"amount_captured"`
	Capturable int64  `json:"amount_capturable"`
	Refunded   int64  `json:"amount_refunded"`
}

func figuresOf(t *testing.T, s *localapi.Stack, account, chargeID string) figures {
	t.Helper()
	r := call(t, s, http.MethodGet, route.Location(chargeID), account, nil, "")
	var f figures
	if err := json.Unmarshal(r.body, &f); r.status != 200 || err != nil {
		t.Fatalf("GET the charge: %d %s", r.status, r.body)
	}
	return f
}

// captureSide is the charge's capture side as the table holds it.
func captureSide(t *testing.T, s *localapi.Stack, chargeID string) capture.Balance {
	t.Helper()
	b, err := dynamo.Open(s.DynamoDB, s.TableName).Captures().Get(context.Background(), chargeID)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCaptureContract: the rows of the capture's and the void's table,
// and every step of their order of decisions, over the stack (the limit
// of actions in flight, an acquirer's expired decline and the holds are
// the service suite's and idemctl's).
func TestCaptureContract(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.Sandbox.SetCaptureBound(false)
	const acct = "acct_capture"
	ch := authorizationOf(t, s, acct, "capture-contract-auth", 1000)
	captured := chargeOf(t, s, acct, "capture-contract-captured", "pm_card_visa", 1000)
	before := items(t, s)

	// 1. The door: nothing stored.
	tok, _ := localapi.Trust{Secret: secret}.TokenWithScopes(acct, time.Hour, "charges:write", "refunds:write", "charges:read")
	req, _ := http.NewRequest(http.MethodPost, s.URL+route.ChargesPath+"/"+ch+"/captures", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "capture-door-1")
	if r := do(t, req); r.status != 403 {
		t.Fatalf("without captures:write: %d %s", r.status, r.body)
	}
	expect(t, postAction(t, s, route.Capture, acct, "", ch, `{}`), 400, "IDEMPOTENCY_KEY_MISSING")
	expect(t, postAction(t, s, route.Capture, acct, "capture-door-2", ch, `{"amount": 1, "amount": 2}`), 400, "VALIDATION_FAILED")
	expect(t, postAction(t, s, route.Capture, acct, "capture-door-3", ch, `{"final": "yes"}`), 400, "VALIDATION_FAILED")
	expect(t, postAction(t, s, route.Void, acct, "capture-door-4", ch, `{"reason": "because"}`), 400, "VALIDATION_FAILED")
	// 3. The charge: none, or pending: nothing stored, the key free; one
	// that can never be captured: the refusal stored under the key.
	expect(t, postAction(t, s, route.Capture, acct, "capture-charge-1", charge.ID(strings.Repeat("0", 40)), `{}`), 404, "NOT_FOUND")
	expect(t, postAction(t, s, route.Capture, "acct_other", "capture-charge-2", ch, `{}`), 404, "NOT_FOUND")
	expect(t, postAction(t, s, route.Capture, acct, "capture-charge-3", captured, `{}`), 422, "CHARGE_NOT_CAPTURABLE")
	expect(t, postAction(t, s, route.Void, acct, "capture-charge-4", captured, `{}`), 422, "CHARGE_NOT_CAPTURABLE")
	pending := inFlightWithARow(t, s, acct, "capture-contract-pending")
	if r := postAction(t, s, route.Capture, acct, "capture-charge-5", pending, `{}`); r.status != 503 || r.code() != "CHARGE_OUTCOME_PENDING" || r.header.Get("Retry-After") == "" {
		t.Fatalf("the pending charge's capture: %d %s", r.status, r.body)
	}
	if n := items(t, s); n != before+4 || len(s.Sandbox.Captures())+len(s.Sandbox.Voids()) != 0 { // the pending charge's record and row, and the two refusals' records
		t.Fatalf("%d items (was %d) after refusals", n, before)
	}

	// 5. The acquirer, and 2. the key's record: a partial capture.
	made := postAction(t, s, route.Capture, acct, "capture-contract-1", ch, `{"amount": 300, "final": false}`)
	if made.status != 201 || !strings.HasPrefix(made.header.Get("Location"), route.CapturesPath+"/cp_") {
		t.Fatalf("capture: %d %v %s", made.status, made.header, made.body)
	}
	again := postAction(t, s, route.Capture, acct, "capture-contract-1", ch, `{"final": false, "amount": 300}`)
	if again.status != 201 || string(again.body) != string(made.body) || again.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("replay: %d %v %s", again.status, again.header, again.body)
	}
	expect(t, postAction(t, s, route.Capture, acct, "capture-contract-1", ch, `{"amount": 300}`), 422, "IDEMPOTENCY_KEY_REUSED")
	if got := call(t, s, http.MethodGet, made.header.Get("Location"), acct, nil, ""); got.status != 200 {
		t.Fatalf("GET the capture: %d", got.status)
	}
	if got := call(t, s, http.MethodGet, route.CapturesPath+"?idempotency_key=capture-contract-1", acct, nil, ""); got.status != 200 || string(got.body) != string(made.body) {
		t.Fatalf("the capture by key: %d %s", got.status, got.body)
	}
	if f := figuresOf(t, s, acct, ch); f != (figures{Status: "authorized", Captured: 300, Capturable: 700}) {
		t.Fatalf("figures %+v", f)
	}
	// The bound: 700 remains.
	exceeds := postAction(t, s, route.Capture, acct, "capture-contract-2", ch, `{"amount": 701, "final": false}`)
	expect(t, exceeds, 422, "CAPTURE_EXCEEDS_AUTHORIZATION")
	if exceeds.problem["capturable"] != float64(700) {
		t.Fatalf("capturable %v, want 700", exceeds.problem["capturable"])
	}
	if r := postAction(t, s, route.Capture, acct, "capture-contract-2", ch, `{"amount": 701, "final": false}`); r.status != 422 || r.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("the refusal's replay: %d %v", r.status, r.header)
	}
	// A capture in flight: a void and a final capture wait (409), the key
	// free; a void in flight: a capture waits.
	setFaults(t, s, `{"latency_ms": 1500}`)
	slow := make(chan reply, 1)
	go func() {
		slow <- postAction(t, s, route.Capture, acct, "capture-contract-3", ch, `{"amount": 100, "final": false}`)
	}()
	waitFor(t, 5*time.Second, "the capture to reserve", func() bool { return captureSide(t, s, ch).Reserved == 100 })
	if r := postAction(t, s, route.Void, acct, "capture-contract-4", ch, `{}`); r.status != 409 || r.code() != "CAPTURE_IN_FLIGHT" || r.header.Get("Retry-After") == "" {
		t.Fatalf("a void behind a capture: %d %s", r.status, r.body)
	}
	expect(t, postAction(t, s, route.Capture, acct, "capture-contract-5", ch, `{}`), 409, "CAPTURE_IN_FLIGHT")
	if actionRecord(t, s, capture.OperationVoid, acct, "capture-contract-4") != nil || actionRecord(t, s, capture.OperationCapture, acct, "capture-contract-5") != nil {
		t.Fatal("a refused action kept its key")
	}
	expect(t, postAction(t, s, route.Capture, acct, "capture-contract-3", ch, `{"amount": 100, "final": false}`), 409, "IDEMPOTENCY_IN_FLIGHT")
	expect(t, <-slow, 201, "")
	// A void in flight: a capture waits (409 VOID_IN_FLIGHT), the key free.
	voiding := authorizationOf(t, s, acct, "capture-contract-auth-5", 400)
	slowVoid := make(chan reply, 1)
	go func() { slowVoid <- postAction(t, s, route.Void, acct, "capture-contract-13", voiding, `{}`) }()
	waitFor(t, 5*time.Second, "the void to reserve", func() bool { return captureSide(t, s, voiding).Reserved == 400 })
	if r := postAction(t, s, route.Capture, acct, "capture-contract-14", voiding, `{"amount": 10, "final": false}`); r.status != 409 || r.code() != "VOID_IN_FLIGHT" || r.header.Get("Retry-After") == "" {
		t.Fatalf("a capture behind a void: %d %s", r.status, r.body)
	}
	if actionRecord(t, s, capture.OperationCapture, acct, "capture-contract-14") != nil {
		t.Fatal("the capture behind the void kept its key")
	}
	expect(t, <-slowVoid, 201, "")
	expect(t, postAction(t, s, route.Capture, acct, "capture-contract-14", voiding, `{"amount": 10, "final": false}`), 422, "CHARGE_NOT_CAPTURABLE")
	// Declined by the acquirer: stored, the amount capturable again.
	setFaults(t, s, `{}`)
	other := authorizationOf(t, s, acct, "capture-contract-auth-2", 500)
	auths := s.Sandbox.Authorizations()
	if _, err := s.Sandbox.Void(context.Background(), "behind-the-back", acquirer.VoidRequest{AuthorizationID: auths[len(auths)-1].ID, Amount: 500, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	s.Sandbox.SetCaptureBound(true)
	dec := postAction(t, s, route.Capture, acct, "capture-contract-6", other, `{"amount": 100, "final": false}`)
	expect(t, dec, 402, "CAPTURE_DECLINED")
	if !strings.HasPrefix(fmt.Sprint(dec.problem["capture_id"]), "cp_") || dec.problem["decline_code"] == nil {
		t.Fatalf("declined: %s", dec.body)
	}
	time.Sleep(2 * time.Millisecond) // past the declined intent's millisecond (design.md §7)
	expect(t, postAction(t, s, route.Void, acct, "capture-contract-7", other, `{}`), 402, "VOID_DECLINED")
	if b := captureSide(t, s, other); b.Capturable != 500 || b.Reserved != 0 || b.Closed != "" {
		t.Fatalf("after the declines: %+v", b)
	}
	s.Sandbox.SetCaptureBound(false)
	// Unavailable, first attempt: nothing sent, the key and the amount
	// free.
	outage := make(chan error, 1)
	go func() { outage <- s.SandboxOutage(3 * time.Second) }()
	waitFor(t, 5*time.Second, "the outage", func() bool {
		resp, err := http.Get(s.SandboxURL + "/v1/captures")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	})
	expect(t, postAction(t, s, route.Void, acct, "capture-contract-8", ch, `{}`), 503, "ACQUIRER_UNAVAILABLE")
	if err := <-outage; err != nil {
		t.Fatal(err)
	}
	if actionRecord(t, s, capture.OperationVoid, acct, "capture-contract-8") != nil || captureSide(t, s, ch).Reserved != 0 {
		t.Fatal("the unsent void kept its key or its reservation")
	}
	// Outcome unknown: 503 pending, the key in flight and the amount
	// reserved.
	setFaults(t, s, `{"error_rate": 1}`)
	expect(t, postAction(t, s, route.Capture, acct, "capture-contract-9", ch, `{"amount": 50, "final": false}`), 503, "CAPTURE_OUTCOME_PENDING")
	setFaults(t, s, `{}`)
	if rec := actionRecord(t, s, capture.OperationCapture, acct, "capture-contract-9"); rec == nil || rec.Status != idem.StatusInProgress || captureSide(t, s, ch).Reserved != 50 {
		t.Fatalf("the unknown capture: %+v", rec)
	}
	// A void of another authorization, then nothing is capturable.
	third := authorizationOf(t, s, acct, "capture-contract-auth-3", 800)
	void := postAction(t, s, route.Void, acct, "capture-contract-10", third, `{"reason": "abandoned"}`)
	if void.status != 201 || !strings.HasPrefix(void.header.Get("Location"), route.VoidsPath+"/vd_") || !strings.Contains(string(void.body), `"amount":800`) {
		t.Fatalf("void: %d %v %s", void.status, void.header, void.body)
	}
	expect(t, postAction(t, s, route.Capture, acct, "capture-contract-11", third, `{}`), 422, "CHARGE_NOT_CAPTURABLE")
	if f := figuresOf(t, s, acct, third); f != (figures{Status: "voided"}) {
		t.Fatalf("the voided charge's figures %+v", f)
	}
	if got := call(t, s, http.MethodGet, route.VoidsPath+"?idempotency_key=capture-contract-10", acct, nil, ""); got.status != 200 {
		t.Fatalf("the void by key: %d", got.status)
	}
	// The authorization's window: past it, 422 AUTHORIZATION_EXPIRED,
	// stored: the retry replays it.
	s.Sandbox.SetAuthorizationWindow(time.Second)
	lapsing := authorizationOf(t, s, acct, "capture-contract-auth-4", 100)
	time.Sleep(1100 * time.Millisecond)
	expect(t, postAction(t, s, route.Capture, acct, "capture-contract-12", lapsing, `{}`), 422, "AUTHORIZATION_EXPIRED")
	if rec := actionRecord(t, s, capture.OperationCapture, acct, "capture-contract-12"); rec == nil || rec.Status != idem.StatusCompleted {
		t.Fatalf("the expired capture's record: %+v", rec)
	}
	if r := postAction(t, s, route.Capture, acct, "capture-contract-12", lapsing, `{}`); r.status != 422 || r.code() != "AUTHORIZATION_EXPIRED" || r.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("the expired capture's retry: %d %s", r.status, r.body)
	}
}

// TestCapturesVoidAndRefundsRace: on one authorization of 1,000, all at
// once: 20 captures of 100 with "final": false under different keys, a
// void, and refunds of 100, with the sandbox's own bounds off, so the
// service's bound alone decides. The sandbox's record must agree: at most
// 1,000 captured, a succeeded void means nothing captured after it,
// refunds at most what was captured, amount_captured and amount_refunded
// equal to the sandbox's sums, nothing left reserved. Then again with
// killed instances and dropped answers, settled by the sweeper and the
// reconciler: no reservation stays leaked.
func TestCapturesVoidAndRefundsRace(t *testing.T) {
	t.Parallel()
	for _, rough := range []bool{false, true} {
		t.Run(map[bool]string{false: "calm", true: "kills and drops"}[rough], func(t *testing.T) {
			t.Parallel()
			s := recoveryStack(t)
			s.Sandbox.SetCaptureBound(false)
			s.Sandbox.SetRefundBound(false)
			acct := "acct_race"
			ch := authorizationOf(t, s, acct, "race-authorization", 1000)
			if rough {
				setFaults(t, s, `{"drop_rate": 0.2, "response_delay_ms": 300, "seed": 7}`)
			}
			var wg sync.WaitGroup
			answers := make([]reply, 31)
			keys := make([][2]string, len(answers))
			for i := range answers {
				switch {
				case i < 20:
					keys[i] = [2]string{capture.OperationCapture, fmt.Sprintf("race-capture-%02d", i)}
				case i == 20:
					keys[i] = [2]string{capture.OperationVoid, "race-the-void"}
				default:
					keys[i] = [2]string{refund.Operation, fmt.Sprintf("race-refund-%02d", i)}
				}
				wg.Go(func() {
					switch keys[i][0] {
					case capture.OperationCapture:
						answers[i] = postAction(t, s, route.Capture, acct, keys[i][1], ch, `{"amount": 100, "final": false}`)
					case capture.OperationVoid:
						answers[i] = postAction(t, s, route.Void, acct, keys[i][1], ch, `{}`)
					default:
						time.Sleep(time.Duration(i-20) * 20 * time.Millisecond)
						answers[i] = postRefund(t, s, acct, keys[i][1], ch, `{"amount": 100}`)
					}
				})
			}
			killed := 0
			if rough {
				time.Sleep(400 * time.Millisecond)
				killed = s.Charge.KillBusy()
			}
			wg.Wait()
			setFaults(t, s, `{}`)
			if rough {
				settle(t, s, acct, keys)
			}
			for i, r := range answers {
				switch {
				case r.status == 201, r.status == 409, r.status == 422, r.status >= 500 && rough:
				case r.status == 503 && (r.code() == "SERVICE_UNAVAILABLE" || r.code() == "ACQUIRER_UNAVAILABLE"):
				default:
					t.Fatalf("answer %d: %d %s", i, r.status, r.body)
				}
			}
			mustAgreeWithTheSandbox(t, s, acct, ch)
			count := map[int]int{}
			for _, r := range answers {
				count[r.status]++
			}
			b := captureSide(t, s, ch)
			t.Logf("answers by status %v; %d instances killed; captured %d, refunded %d, released %d", count, killed, b.Captured, b.Refunded, b.Released)
		})
	}
}

// settle runs the sweeper, whose commands the reconciler takes, until
// none of the keys' records (operation and key) is in flight. A sweep
// that fails (one that outlives the stack's short function timeout on a
// loaded machine) is run again, as the schedule would.
func settle(t *testing.T, s *localapi.Stack, account string, keys [][2]string) {
	t.Helper()
	waitFor(t, 90*time.Second, "every intent to settle", func() bool {
		if _, err := s.Sweep(context.Background()); err != nil {
			t.Logf("sweep: %v; run again", err)
		}
		for _, k := range keys {
			if rec := actionRecord(t, s, k[0], account, k[1]); rec != nil && rec.Status == idem.StatusInProgress {
				return false
			}
		}
		return true
	})
}

// mustAgreeWithTheSandbox checks the charge's balance and its GET against
// the sandbox's own record of what it captured, released and refunded.
func mustAgreeWithTheSandbox(t *testing.T, s *localapi.Stack, account, chargeID string) {
	t.Helper()
	ch, err := dynamo.Open(s.DynamoDB, s.TableName).Ledger().Get(context.Background(), chargeID)
	if err != nil {
		t.Fatal(err)
	}
	captured, refunded := s.Sandbox.Captured(ch.AuthorizationID), s.Sandbox.Refunded(ch.AuthorizationID)
	b := captureSide(t, s, chargeID)
	if captured > 1000 || refunded > captured || b.Captured != captured || b.Refunded != refunded || b.Reserved != 0 ||
		b.Capturable+b.Captured+b.Released != b.Authorized {
		t.Fatalf("the sandbox captured %d and refunded %d; the balance %+v", captured, refunded, b)
	}
	var voidedAt time.Time
	for _, v := range s.Sandbox.Voids() {
		if v.AuthorizationID == ch.AuthorizationID && v.Status == acquirer.VoidSucceeded {
			voidedAt = v.CreatedAt
			if b.Closed != capture.ClosedVoided || v.Amount != b.Released {
				t.Fatalf("a succeeded void of %d, and the balance %+v", v.Amount, b)
			}
		}
	}
	for _, c := range s.Sandbox.Captures() {
		if c.AuthorizationID == ch.AuthorizationID && c.Status == acquirer.CaptureSucceeded && !voidedAt.IsZero() && c.CreatedAt.After(voidedAt) {
			t.Fatalf("a capture at %v after the void at %v", c.CreatedAt, voidedAt)
		}
	}
	f := figuresOf(t, s, account, chargeID)
	if f.Captured != captured || f.Refunded != refunded {
		t.Fatalf("amount_captured %d, amount_refunded %d; the sandbox %d, %d", f.Captured, f.Refunded, captured, refunded)
	}
}

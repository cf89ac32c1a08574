package systemtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/conflictproxy"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/route"
)

// chargeOf charges amount BRL with method as account and returns the
// charge's id.
func chargeOf(t *testing.T, s *localapi.Stack, account, key, method string, amount int64) string {
	t.Helper()
	r := postCharge(t, s, account, key, fmt.Sprintf(`{"amount": %d, "currency": "BRL", "order_id": "r-1", "payment_method": %q}`, amount, method))
	if r.status == 402 {
		return r.problem["charge_id"].(string)
	}
	if r.status != 201 {
		t.Fatalf("charge: %d %s", r.status, r.body)
	}
	return strings.TrimPrefix(r.header.Get("Location"), route.ChargesPath+"/")
}

// postRefund POSTs body to the charge's refunds as account, with key as
// its Idempotency-Key ("" sends none).
func postRefund(t *testing.T, s *localapi.Stack, account, key, chargeID, body string) reply {
	t.Helper()
	headers := map[string]string{}
	if key != "" {
		headers["Idempotency-Key"] = key
	}
	return call(t, s, http.MethodPost, route.ChargesPath+"/"+chargeID+"/refunds", account, headers, body)
}

// balanceOf is the charge's refund balance as the table holds it.
func balanceOf(t *testing.T, s *localapi.Stack, chargeID string) refund.Balance {
	t.Helper()
	b, err := dynamo.Open(s.DynamoDB, s.TableName).Balances().Get(context.Background(), chargeID)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refundRecord is the refund key's record, nil when it has none.
func refundRecord(t *testing.T, s *localapi.Stack, account, key string) *idem.Record {
	t.Helper()
	rec, err := dynamo.Open(s.DynamoDB, s.TableName).Store().Get(context.Background(), idem.Scope{Operation: refund.Operation, Account: account, Key: key}.PK(), time.Now())
	if err != nil {
		return nil
	}
	return rec
}

// amountRefunded is the charge's amount_refunded, as its GET says.
func amountRefunded(t *testing.T, s *localapi.Stack, account, chargeID string) float64 {
	t.Helper()
	r := call(t, s, http.MethodGet, route.Location(chargeID), account, nil, "")
	var ch map[string]any
	if err := json.Unmarshal(r.body, &ch); r.status != 200 || err != nil {
		t.Fatalf("GET the charge: %d %s", r.status, r.body)
	}
	return ch["amount_refunded"].(float64)
}

// mustRefundExactly checks what the acquirer refunded of the charge, that
// its own bound refused nothing, and that the balance agrees with nothing
// left reserved.
func mustRefundExactly(t *testing.T, s *localapi.Stack, account, chargeID string, amount int64) {
	t.Helper()
	ch, err := dynamo.Open(s.DynamoDB, s.TableName).Ledger().Get(context.Background(), chargeID)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sandbox.Refunded(ch.AuthorizationID); got != amount || s.Sandbox.RefundsRefused() != 0 {
		t.Fatalf("the acquirer refunded %d (refused %d), want %d", got, s.Sandbox.RefundsRefused(), amount)
	}
	if b := balanceOf(t, s, chargeID); b.Refunded != amount || b.Reserved != 0 || b.Remaining+b.Refunded != ch.Amount {
		t.Fatalf("balance %+v, want %d refunded and nothing reserved", b, amount)
	}
	if got := amountRefunded(t, s, account, chargeID); got != float64(amount) {
		t.Fatalf("amount_refunded %v, want %d", got, amount)
	}
}

// TestRefundsNeverExceedTheCharge: 20 refunds of 20 % of one charge, under
// 20 keys, at once, through the stack's two instances, with the sandbox's
// own bound off: exactly 5 answer 201 and 15 answer 422
// REFUND_EXCEEDS_CHARGE; the acquirer refunded exactly the charge, and
// amount_refunded says so.
func TestRefundsNeverExceedTheCharge(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.Sandbox.SetRefundBound(false)
	ch := chargeOf(t, s, "acct_refund", "refund-bound-charge", "pm_card_visa", 10000)
	answers := make([]reply, 20)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			answers[i] = postRefund(t, s, "acct_refund", fmt.Sprintf("refund-bound-%d", i), ch, `{"amount": 2000}`)
		})
	}
	wg.Wait()
	count := map[string]int{}
	for _, r := range answers {
		count[fmt.Sprintf("%d %s", r.status, r.code())]++
		if r.status == 422 && r.problem["refundable"] == nil {
			t.Fatalf("a 422 without refundable: %s", r.body)
		}
	}
	if count["201 "] != 5 || count["422 REFUND_EXCEEDS_CHARGE"] != 15 {
		t.Fatalf("answers %v, want 5 × 201 and 15 × 422 REFUND_EXCEEDS_CHARGE", count)
	}
	mustRefundExactly(t, s, "acct_refund", ch, 10000)
	// Each refund made has its event, once, on the HTTP subscriber's queue,
	// beside the charge's; the refused ones have none.
	made := map[string]bool{}
	for _, r := range answers {
		if r.status == 201 {
			made[strings.TrimPrefix(r.header.Get("Location"), route.RefundsPath+"/")] = true
		}
	}
	got := distinctEvents(t, s, eventtest.Schema(t), event.ProducerHTTP, 6, 20*time.Second)
	refunds := 0
	for _, e := range got {
		if e.Type != event.RefundSucceeded {
			continue
		}
		refunds++
		if e.Refund == nil || !made[e.Refund.ID] || e.Refund.ChargeID != ch || e.Refund.Amount != 2000 || e.Account != "acct_refund" {
			t.Fatalf("refund event %+v", e)
		}
	}
	if refunds != 5 || len(got) != 6 {
		t.Fatalf("%d refund events of %d, want 5 of 6", refunds, len(got))
	}
}

// TestRefundContract: every row of the refund's contract and every step
// of its order of decisions, over the stack.
func TestRefundContract(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.Sandbox.SetRefundBound(false)
	const acct = "acct_refund"
	ch := chargeOf(t, s, acct, "refund-contract-charge", "pm_card_visa", 1000)
	declined := chargeOf(t, s, acct, "refund-contract-declined", "pm_card_declined", 1000)
	before := items(t, s)

	// 1. The door: nothing stored.
	r := call(t, s, http.MethodPost, route.ChargesPath+"/"+ch+"/refunds", "", map[string]string{"Idempotency-Key": "refund-door-1"}, `{}`)
	if r.status != 401 {
		t.Fatalf("no token: %d", r.status)
	}
	tok, _ := localapi.Trust{Secret: secret}.TokenWithScopes(acct, time.Hour, "charges:write", "charges:read")
	req, _ := http.NewRequest(http.MethodPost, s.URL+route.ChargesPath+"/"+ch+"/refunds", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "refund-door-2")
	if r := do(t, req); r.status != 403 {
		t.Fatalf("without refunds:write: %d %s", r.status, r.body)
	}
	if r := call(t, s, http.MethodPut, route.ChargesPath+"/"+ch+"/refunds", acct, map[string]string{"Idempotency-Key": "refund-door-3"}, `{}`); r.status != 404 {
		t.Fatalf("no such route: %d", r.status)
	}
	expect(t, call(t, s, http.MethodPost, route.ChargesPath+"/"+ch+"/refunds", acct, map[string]string{"Idempotency-Key": "refund-door-4", "Content-Type": "text/plain"}, `{}`), 415, "UNSUPPORTED_MEDIA_TYPE")
	expect(t, postRefund(t, s, acct, "", ch, `{}`), 400, "IDEMPOTENCY_KEY_MISSING")
	expect(t, postRefund(t, s, acct, "short", ch, `{}`), 400, "IDEMPOTENCY_KEY_INVALID")
	expect(t, postRefund(t, s, acct, "refund-door-5", ch, `{"amount": 1, "amount": 2}`), 400, "VALIDATION_FAILED")
	expect(t, postRefund(t, s, acct, "refund-door-6", ch, `{"reason": "because"}`), 400, "VALIDATION_FAILED")
	// 3. The charge: nothing stored, the key free.
	expect(t, postRefund(t, s, acct, "refund-charge-1", charge.ID(strings.Repeat("0", 40)), `{}`), 404, "NOT_FOUND")
	expect(t, postRefund(t, s, "acct_other", "refund-charge-2", ch, `{}`), 404, "NOT_FOUND")
	expect(t, postRefund(t, s, acct, "refund-charge-3", declined, `{}`), 422, "CHARGE_NOT_REFUNDABLE")
	if n := items(t, s); n != before || len(s.Sandbox.Refunds()) != 0 {
		t.Fatalf("%d items (was %d), %d refunds after refusals", n, before, len(s.Sandbox.Refunds()))
	}
	// A charge whose row is written while its record is still in flight (a
	// worker that died between the two): its outcome is not known yet.
	pending := inFlightWithARow(t, s, acct, "refund-contract-pending-charge")
	r = postRefund(t, s, acct, "refund-charge-4", pending, `{}`)
	expect(t, r, 503, "CHARGE_OUTCOME_PENDING")
	if r.header.Get("Retry-After") == "" || refundRecord(t, s, acct, "refund-charge-4") != nil {
		t.Fatalf("the pending charge's refund: %v, its key's record %+v", r.header, refundRecord(t, s, acct, "refund-charge-4"))
	}

	// 5. The acquirer, and 2. the key's record.
	made := postRefund(t, s, acct, "refund-contract-1", ch, `{"amount": 300, "reason": "requested_by_customer"}`)
	if made.status != 201 || !strings.HasPrefix(made.header.Get("Location"), route.RefundsPath+"/re_") {
		t.Fatalf("refund: %d %v %s", made.status, made.header, made.body)
	}
	again := postRefund(t, s, acct, "refund-contract-1", ch, `{"reason": "requested_by_customer", "amount": 300}`)
	if again.status != 201 || string(again.body) != string(made.body) || again.header.Get("Idempotent-Replay") != "true" || again.header.Get("Location") != made.header.Get("Location") {
		t.Fatalf("replay: %d %v %s", again.status, again.header, again.body)
	}
	expect(t, postRefund(t, s, acct, "refund-contract-1", ch, `{"amount": 301}`), 422, "IDEMPOTENCY_KEY_REUSED")
	// One key string for a charge and for a refund: two operations.
	both := postRefund(t, s, acct, "refund-contract-charge", ch, `{"amount": 100}`)
	if both.status != 201 {
		t.Fatalf("the charge's key, used for a refund: %d %s", both.status, both.body)
	}
	// In flight.
	setFaults(t, s, `{"latency_ms": 1500}`)
	slow := make(chan reply, 1)
	go func() { slow <- postRefund(t, s, acct, "refund-contract-2", ch, `{"amount": 100}`) }()
	waitFor(t, 5*time.Second, "the refund to reach the acquirer", func() bool { return s.Sandbox.RefundsReceived() == 3 })
	expect(t, postRefund(t, s, acct, "refund-contract-2", ch, `{"amount": 100}`), 409, "IDEMPOTENCY_IN_FLIGHT")
	if r := call(t, s, http.MethodGet, route.RefundsPath+"?idempotency_key=refund-contract-2", acct, nil, ""); r.status != 409 {
		t.Fatalf("lookup while in flight: %d", r.status)
	}
	if r := <-slow; r.status != 201 {
		t.Fatalf("the slow refund: %d %s", r.status, r.body)
	}
	setFaults(t, s, `{}`)
	// The bound: what remains is 1000 - 500.
	exceeds := postRefund(t, s, acct, "refund-contract-3", ch, `{"amount": 501}`)
	expect(t, exceeds, 422, "REFUND_EXCEEDS_CHARGE")
	if exceeds.problem["refundable"] != float64(500) {
		t.Fatalf("refundable %v, want 500", exceeds.problem["refundable"])
	}
	if r := postRefund(t, s, acct, "refund-contract-3", ch, `{"amount": 501}`); r.status != 422 || r.header.Get("Idempotent-Replay") != "true" || string(r.body) != string(exceeds.body) {
		t.Fatalf("the refusal's replay: %d %v %s", r.status, r.header, r.body)
	}
	// Declined by the acquirer: stored, and the amount stays refundable.
	setFaults(t, s, `{"decline_refunds": true}`)
	dec := postRefund(t, s, acct, "refund-contract-4", ch, `{}`)
	expect(t, dec, 402, "REFUND_DECLINED")
	if dec.problem["decline_code"] == nil || !strings.HasPrefix(fmt.Sprint(dec.problem["refund_id"]), "re_") {
		t.Fatalf("declined: %s", dec.body)
	}
	setFaults(t, s, `{}`)
	// Unavailable, first attempt: nothing sent, key and amount free.
	outage := make(chan error, 1)
	go func() { outage <- s.SandboxOutage(3 * time.Second) }()
	waitFor(t, 5*time.Second, "the outage", func() bool {
		resp, err := http.Get(s.SandboxURL + "/v1/refunds")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	})
	expect(t, postRefund(t, s, acct, "refund-contract-5", ch, `{"amount": 200}`), 503, "ACQUIRER_UNAVAILABLE")
	if rec := refundRecord(t, s, acct, "refund-contract-5"); rec != nil {
		t.Fatalf("the released key's record: %+v", rec)
	}
	if err := <-outage; err != nil {
		t.Fatal(err)
	}
	expect(t, postRefund(t, s, acct, "refund-contract-5", ch, `{"amount": 200}`), 201, "")
	// {} takes what remains: 300.
	rest := postRefund(t, s, acct, "refund-contract-6", ch, `{}`)
	var restBody map[string]any
	if _ = json.Unmarshal(rest.body, &restBody); rest.status != 201 || restBody["amount"] != float64(300) || restBody["reason"] != nil {
		t.Fatalf("the rest: %d %s", rest.status, rest.body)
	}
	expect(t, postRefund(t, s, acct, "refund-contract-7", ch, `{}`), 422, "REFUND_EXCEEDS_CHARGE")
	mustRefundExactly(t, s, acct, ch, 1000)

	// The lookups.
	loc := made.header.Get("Location")
	if r := call(t, s, http.MethodGet, loc, acct, nil, ""); r.status != 200 || string(r.body) != string(made.body) {
		t.Fatalf("GET the refund: %d %s", r.status, r.body)
	}
	expect(t, call(t, s, http.MethodGet, loc, "acct_other", nil, ""), 404, "NOT_FOUND")
	if r := call(t, s, http.MethodGet, route.RefundsPath+"?idempotency_key=refund-contract-1", acct, nil, ""); r.status != 200 || string(r.body) != string(made.body) {
		t.Fatalf("lookup: %d %s", r.status, r.body)
	}
	expect(t, call(t, s, http.MethodGet, route.RefundsPath+"?idempotency_key=refund-contract-3", acct, nil, ""), 404, "NOT_FOUND")

	// A charge takes refunds one after another past the limit, which is
	// on refunds in flight at once: with MaxEntries in flight (planted as
	// other instances' reservations), the next is refused.
	small := chargeOf(t, s, acct, "refund-contract-small", "pm_card_visa", 1000)
	for i := range refund.MaxEntries + 10 {
		if r := postRefund(t, s, acct, fmt.Sprintf("refund-small-%d", i), small, `{"amount": 1}`); r.status != 201 {
			t.Fatalf("small refund %d: %d %s", i, r.status, r.body)
		}
	}
	balances := dynamo.Open(s.DynamoDB, s.TableName).Balances()
	if err := refundtest.PlantInFlight(context.Background(), balances, small, 1000, time.Now(), refund.MaxEntries); err != nil {
		t.Fatal(err)
	}
	expect(t, postRefund(t, s, acct, "refund-small-last", small, `{"amount": 1}`), 422, "REFUND_LIMIT_REACHED")
}

// TestRefundDroppedAnswerIsReconciled: the acquirer refunds, the answer is
// dropped: 503 REFUND_OUTCOME_PENDING with the amount still reserved; the
// sweeper flags the record and the reconciler completes it to succeeded.
func TestRefundDroppedAnswerIsReconciled(t *testing.T) {
	t.Parallel()
	s := recoveryStack(t)
	s.Sandbox.SetRefundBound(false)
	ch := chargeOf(t, s, "acct_refund", "refund-dropped-charge", "pm_card_visa", 1000)
	setFaults(t, s, `{"drop_rate": 1}`)
	expect(t, postRefund(t, s, "acct_refund", "refund-dropped-1", ch, `{"amount": 400}`), 503, "REFUND_OUTCOME_PENDING")
	setFaults(t, s, `{}`)
	if b := balanceOf(t, s, ch); b.Reserved != 400 || b.Remaining != 600 {
		t.Fatalf("balance %+v, want 400 reserved", b)
	}
	sweepUntil(t, s, 15*time.Second)
	waitFor(t, 15*time.Second, "the reconciliation", func() bool {
		rec := refundRecord(t, s, "acct_refund", "refund-dropped-1")
		return rec != nil && rec.Status == idem.StatusCompleted
	})
	mustRefundExactly(t, s, "acct_refund", ch, 400)
	if r := postRefund(t, s, "acct_refund", "refund-dropped-1", ch, `{"amount": 400}`); r.status != 201 || r.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("the client's retry: %d %s", r.status, r.body)
	}
}

// TestRefundLyingAcquirerIsHeld: a refund made for ten times the amount
// asked is held for an operator: 503 REFUND_OUTCOME_PENDING, no refund row,
// the reservation kept; the sweeper never flags it; refund.held reaches
// the HTTP subscriber once.
func TestRefundLyingAcquirerIsHeld(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.Sandbox.SetRefundBound(false)
	ch := chargeOf(t, s, "acct_refund", "refund-tenfold-charge", "pm_card_refunds_tenfold", 1000)
	expect(t, postRefund(t, s, "acct_refund", "refund-tenfold-1", ch, `{"amount": 50}`), 503, "REFUND_OUTCOME_PENDING")
	rec := refundRecord(t, s, "acct_refund", "refund-tenfold-1")
	if rec == nil || !rec.Held() || rec.Hold.Reason != acquirer.ReasonAmount {
		t.Fatalf("record %+v, want held for %s", rec, acquirer.ReasonAmount)
	}
	if _, err := dynamo.Open(s.DynamoDB, s.TableName).Refunds().Get(context.Background(), refund.ID(rec.DownstreamKey)); err == nil {
		t.Fatal("a held refund has a row")
	}
	if b := balanceOf(t, s, ch); b.Reserved != 50 {
		t.Fatalf("balance %+v, want the reservation kept", b)
	}
	expect(t, postRefund(t, s, "acct_refund", "refund-tenfold-1", ch, `{"amount": 50}`), 503, "REFUND_OUTCOME_PENDING")
	if r, err := s.Sweep(context.Background()); err != nil || r.Flagged != 0 {
		t.Fatalf("sweep: %+v, %v", r, err)
	}
	// The charge's event, then the refund's hold, each once.
	got := distinctEvents(t, s, eventtest.Schema(t), event.ProducerHTTP, 2, 20*time.Second)
	held := slices.IndexFunc(got, func(e event.Event) bool { return e.Type == event.RefundHeld })
	if len(got) != 2 || held < 0 || got[held].Refund.ID != refund.ID(rec.DownstreamKey) || got[held].Refund.ChargeID != ch ||
		got[held].Reason != acquirer.ReasonAmount {
		t.Fatalf("events %+v", got)
	}
}

// TestRefundKills: a worker killed between the send and the row (the
// acquirer refunded; the sweeper's reconciler completes it), and one
// killed between the reservation and the send (nothing left; the
// reconciler releases the entry, then the key). Each ends with the bound
// intact and nothing reserved.
func TestRefundKills(t *testing.T) {
	t.Parallel()
	s := recoveryStack(t)
	s.Sandbox.SetRefundBound(false)
	ch := chargeOf(t, s, "acct_refund", "refund-kill-charge", "pm_card_visa", 1000)

	setFaults(t, s, `{"response_delay_ms": 2500}`)
	done := make(chan reply, 1)
	go func() { done <- postRefund(t, s, "acct_refund", "refund-kill-1", ch, `{"amount": 700}`) }()
	waitFor(t, 5*time.Second, "the refund", func() bool { return len(s.Sandbox.Refunds()) == 1 })
	if killed := s.Charge.KillBusy(); killed != 1 {
		t.Fatalf("killed %d instances, want 1", killed)
	}
	if r := <-done; r.status < 500 {
		t.Fatalf("the killed invocation answered %d", r.status)
	}
	setFaults(t, s, `{}`)
	if b := balanceOf(t, s, ch); b.Reserved != 700 {
		t.Fatalf("after the kill: balance %+v", b)
	}
	sweepUntil(t, s, 15*time.Second)
	waitFor(t, 15*time.Second, "the reconciliation", func() bool {
		rec := refundRecord(t, s, "acct_refund", "refund-kill-1")
		return rec != nil && rec.Status == idem.StatusCompleted
	})
	mustRefundExactly(t, s, "acct_refund", ch, 700)

	// A worker on the stack's table, killed after its reservation.
	table := dynamo.Open(s.DynamoDB, s.TableName)
	guard := idem.NewGuard(table.Store(), idem.Config{DefaultLease: 3 * time.Second, Protocol: s.Protocol})
	charges := charge.NewService(guard, table.Ledger(), nil, httpapi.Render, charge.Config{})
	doomed := refund.NewService(guard, charges, table.Balances(), table.Refunds(), killedBeforeSending{}, httpapi.RenderRefund, charge.Config{})
	func() {
		defer func() { _ = recover() }()
		res := doomed.Refund(context.Background(), refund.Input{Account: "acct_refund", Keys: []string{"refund-kill-2"}, ChargeID: ch, Body: []byte(`{}`)})
		t.Fatalf("the worker was not killed: %s", res.Outcome)
	}()
	if b := balanceOf(t, s, ch); b.Reserved != 300 || b.Remaining != 0 {
		t.Fatalf("after the second kill: balance %+v", b)
	}
	expect(t, postRefund(t, s, "acct_refund", "refund-kill-3", ch, `{"amount": 1}`), 422, "REFUND_EXCEEDS_CHARGE")
	time.Sleep(time.Second)
	sweepUntil(t, s, 15*time.Second)
	waitFor(t, 15*time.Second, "the release", func() bool { return refundRecord(t, s, "acct_refund", "refund-kill-2") == nil })
	mustRefundExactly(t, s, "acct_refund", ch, 700)
	if b := balanceOf(t, s, ch); b.Remaining != 300 {
		t.Fatalf("after the release: balance %+v", b)
	}
	if r := postRefund(t, s, "acct_refund", "refund-kill-2", ch, `{}`); r.status != 201 {
		t.Fatalf("the retry after the release: %d %s", r.status, r.body)
	}
	mustRefundExactly(t, s, "acct_refund", ch, 1000)
}

// inFlightWithARow leaves a charge as a worker that wrote its ledger row
// and died before completing its record: the record in flight (its lease
// a minute long), the row there. It returns the charge's id.
func inFlightWithARow(t *testing.T, s *localapi.Stack, account, key string) string {
	t.Helper()
	table := dynamo.Open(s.DynamoDB, s.TableName)
	guard := idem.NewGuard(table.Store(), idem.Config{DefaultLease: time.Minute, Protocol: s.Protocol})
	claim, err := guard.Begin(context.Background(), idem.Scope{Operation: charge.Operation, Account: account, Key: key}, canonicalOf(t, visa))
	if err != nil {
		t.Fatal(err)
	}
	id := charge.ID(claim.Lease.DownstreamKey())
	if _, err := table.Ledger().Write(context.Background(), charge.Charge{
		Origin: op.Origin{ID: id, Account: account, IdempotencyKey: key, AcquirerID: s.Protocol.Downstream, CreatedAt: time.Now()},
		Status: acquirer.StatusCaptured, Amount: 25000, Currency: "BRL", OrderID: "123",
		AuthorizationID: "auth_pending",
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

// killedBeforeSending is an acquirer whose caller dies as it sends.
type killedBeforeSending struct{}

func (killedBeforeSending) Refund(context.Context, string, acquirer.RefundRequest) (acquirer.Refund, error) {
	panic("killed between the reservation and the send")
}

func (killedBeforeSending) LookupRefund(context.Context, string) (acquirer.Refund, error) {
	return acquirer.Refund{}, acquirer.ErrNotFound
}

// TestRefundStoreUnavailable: the table fails the refund's first write
// (its claim) before anything was sent: 503 SERVICE_UNAVAILABLE with
// Retry-After, nothing stored, and the same key refunds once the table is
// back.
func TestRefundStoreUnavailable(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	proxy, err := conflictproxy.Failing(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), func(op string) bool { return failing.Load() && op == "PutItem" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	s := newStack(t, "AWS_ENDPOINT_URL_DYNAMODB="+proxy.URL)
	s.Sandbox.SetRefundBound(false)
	ch := chargeOf(t, s, "acct_refund", "refund-store-charge", "pm_card_visa", 1000)
	failing.Store(true)
	r := postRefund(t, s, "acct_refund", "refund-store-1", ch, `{"amount": 100}`)
	failing.Store(false)
	expect(t, r, 503, "SERVICE_UNAVAILABLE")
	if r.header.Get("Retry-After") == "" || refundRecord(t, s, "acct_refund", "refund-store-1") != nil || len(s.Sandbox.Refunds()) != 0 || proxy.Refused() == 0 {
		t.Fatalf("Retry-After %q, record %+v, %d refunds, %d writes refused", r.header.Get("Retry-After"), refundRecord(t, s, "acct_refund", "refund-store-1"), len(s.Sandbox.Refunds()), proxy.Refused())
	}
	if r := postRefund(t, s, "acct_refund", "refund-store-1", ch, `{"amount": 100}`); r.status != 201 {
		t.Fatalf("once the table is back: %d %s", r.status, r.body)
	}
	mustRefundExactly(t, s, "acct_refund", ch, 100)
}

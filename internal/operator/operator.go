// Package operator is the operator's channel: the one way an operator's
// tool acts on a record. The tool (idemctl) never calls the acquirer and
// holds none of its settings: it sends a Request to the operator function
// (functions/operator) through a Lambda function URL with AWS_IAM auth,
// signed with SigV4 by the operator's own AWS credentials (Client). Lambda
// authenticates the caller and puts its ARN in the invocation's request
// context; the function runs the charge service's own path (the refund
// service's, for a refund's record) with the deployment's acquirer,
// credential and clock, and records that ARN as
// who decided. The local stack serves the same URL the same way.
//
// This package is the contract both sides read: the actions, the request
// (strict Decode), the answer and its outcomes.
//
//	{"action": "accept", "record": "IDEM#6:charge9:acct_7Hq2...", "intent": "9f2c...",
//	 "decision": "dec-5b0f...", "terms": {"authorization_id": "auth_1", "status": "captured", "amount": 25000, "currency": "BRL"}}
package operator

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// The actions.
const (
	// Look asks the acquirer what it has under the record's downstream
	// key, without taking anything over: what the operator is shown before
	// deciding. It writes nothing.
	Look = "look"
	// Reconcile resolves a record left in flight through the reconciler's
	// own path: take the lease over once it ended more than T + skew ago,
	// ask the acquirer, complete or release.
	Reconcile = "reconcile"
	// Release is Reconcile with the policy "release, or say why not": a
	// record the acquirer has the charge of is completed, never deleted,
	// and the answer says the release did not happen.
	Release = "release"
	// VoidConfirmed and Accept settle a held record (charge.Service.Settle).
	VoidConfirmed = idem.SettleVoidConfirmed
	Accept        = idem.SettleAccept
	// ReadBack says what became of a settlement (Request.Of) by its
	// decision id, without doing anything: the record of its intent, the
	// intent's ledger row, or its release marker (charge.Service.ReadBack).
	ReadBack = "read_back"
)

// Acting reports whether action may change anything (all but Look and
// ReadBack): every acting request carries a decision id of its own.
func Acting(action string) bool { return action != Look && action != ReadBack }

// Settling reports whether action is a settlement of a held record.
func Settling(action string) bool { return action == VoidConfirmed || action == Accept }

// Request is one call of the channel.
type Request struct {
	// Action is one of the actions above.
	Action string `json:"action"`
	// Record is the record's partition key (idem.Scope.PK).
	Record string `json:"record"`
	// Intent is the record's downstream key as the operator was shown it:
	// the request acts on that intent of the key only, never on a later
	// one a client's retry claimed since.
	Intent string `json:"intent"`
	// Decision is the decision's id, on every acting request: the same on
	// every retry of one decision, so a retry reads back what the first
	// call did instead of doing it twice. On ReadBack, the decision to
	// read back. Empty for Look.
	Decision string `json:"decision,omitzero"`
	// Of, for ReadBack only, is the settlement the decision was
	// (VoidConfirmed or Accept): an id counts as this decision's only with
	// its action.
	Of string `json:"of,omitzero"`
	// Terms, for Accept only, are the acquirer's terms as Look showed them:
	// the accept writes only if its own lookup, after the take-over, states
	// the same.
	Terms *Terms `json:"terms,omitzero"`
}

// Terms are an authorization's or a refund's terms as the acquirer stated
// them. For a refund's record, RefundID is the acquirer's refund and
// AuthorizationID the charge's authorization it refunds, as the acquirer
// stated it; a refund row's terms have none (the row names its charge).
type Terms struct {
	AuthorizationID string `json:"authorization_id,omitzero"`
	RefundID        string `json:"refund_id,omitzero"`
	Status          string `json:"status"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
}

// MaxRequest bounds a request's body: a record key, an intent, an id and
// terms take well under 2 KiB.
const MaxRequest = 4096

// Encode is r's body.
func (r Request) Encode() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode operator request: %w", err)
	}
	return b, nil
}

// Decode parses a request body strictly (strictjson.Unmarshal: no
// duplicate, unknown or case-variant member, valid UTF-8, one object) and
// checks it: a known action; a record that is an idempotency record's key;
// an intent of 1 to 128 characters; a decision id on every request but
// Look, and none on Look (idem.ValidDecisionID); terms on Accept and on
// nothing else; Of, a settlement, on ReadBack and on nothing else. Every
// refusal is a *strictjson.Error naming the member.
func Decode(body []byte) (Request, error) {
	refuse := func(field, message string) (Request, error) {
		return Request{}, &strictjson.Error{Field: field, Message: message}
	}
	if len(body) > MaxRequest {
		return refuse("", fmt.Sprintf("over %d bytes", MaxRequest))
	}
	var r Request
	if err := strictjson.Unmarshal(body, &r); err != nil {
		return Request{}, err
	}
	switch r.Action {
	case Look, Reconcile, Release, VoidConfirmed, Accept, ReadBack:
	case "":
		return refuse("action", "required")
	default:
		return refuse("action", "unknown action")
	}
	if _, err := idem.ParsePK(r.Record); err != nil {
		return refuse("record", "not an idempotency record's key")
	}
	if r.Intent == "" || len(r.Intent) > 128 || !visible(r.Intent) {
		return refuse("intent", "1 to 128 visible ASCII characters")
	}
	switch {
	case r.Action != Look && !idem.ValidDecisionID(r.Decision):
		return refuse("decision", "8 to 64 letters, digits, '-' and '_'")
	case r.Action == Look && r.Decision != "":
		return refuse("decision", "not a member of a look")
	case (r.Action == Accept) != (r.Terms != nil):
		return refuse("terms", "required on an accept, and on nothing else")
	case (r.Action == ReadBack) != (r.Of != ""):
		return refuse("of", "required on a read-back, and on nothing else")
	case r.Action == ReadBack && !Settling(r.Of):
		return refuse("of", `"void_confirmed" or "accept"`)
	}
	return r, nil
}

func visible(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// The outcomes an Answer names.
const (
	// Look's: the acquirer has an authorization (Terms), or none.
	OutcomeLooked          = "looked"
	OutcomeNoAuthorization = "no_authorization"
	// Reconcile's and Release's (op.Reconciled's names).
	OutcomeCompleted   = "completed"
	OutcomeReleased    = "released"
	OutcomeNothingToDo = "nothing_to_do"
	OutcomeHeld        = "held"
	OutcomeMismatch    = "mismatch"
	// A settlement's: the state read back (op.State's names).
	OutcomeStillHeld          = "still_held"
	OutcomeReleasedByThis     = "released_by_this_decision"
	OutcomeCompletedByThis    = "completed_by_this_decision"
	OutcomeReleasedByAnother  = "released_by_another_decision"
	OutcomeCompletedByAnother = "completed_by_another_decision"
	OutcomeNotHeld            = "not_held"
	OutcomeInProgress         = "in_progress" // an earlier call of the decision is carrying it out: ask again after RetryAfter
	// Any action's: the record decided on is no longer there (or another
	// intent of the key holds it); the request was refused; or nothing is
	// known yet (the record stays as it was; try again).
	OutcomeGone    = "gone"
	OutcomeRefused = "refused"
	OutcomeFailed  = "failed"
	// The request itself was refused (400): malformed, or not allowed.
	OutcomeInvalid = "invalid"
)

// Answer is what the channel says of one request.
type Answer struct {
	// Outcome is one of the Outcome* names.
	Outcome string `json:"outcome"`
	// TookEffect is true when this request's own action took effect: the
	// record completed or released by it (a settlement read back as this
	// decision's, a reconciliation that completed or released). A look
	// never takes effect.
	TookEffect bool `json:"took_effect"`
	// Detail says it in words, for the person.
	Detail string `json:"detail,omitzero"`
	// Terms are what the acquirer says (Look), or the ledger row's terms of
	// a completed record.
	Terms *Terms `json:"terms,omitzero"`
	// Settlement is the decision the table holds for the record, when one
	// does: the release marker's, the completed record's, or the one a
	// held record was last taken over for.
	Settlement *Settlement `json:"settlement,omitzero"`
	// By is the caller as the channel authenticated it: what is recorded
	// as who decided.
	By string `json:"by"`
	// RetryAfter is how many seconds to wait before asking again
	// (OutcomeInProgress: until the earlier call's lease ends).
	RetryAfter int `json:"retry_after,omitzero"`
}

// Settlement is a decision as the table holds it.
type Settlement struct {
	Action   string    `json:"action"`
	By       string    `json:"by"`
	Decision string    `json:"decision,omitzero"`
	At       time.Time `json:"at"`
}

// Encode is a's body.
func (a Answer) Encode() ([]byte, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode operator answer: %w", err)
	}
	return b, nil
}

// DecodeAnswer parses an answer's body, as strictly as the answer of any
// system called (strictjson.UnmarshalResponse), and checks it names an
// outcome.
func DecodeAnswer(body []byte) (Answer, error) {
	var a Answer
	if err := strictjson.UnmarshalResponse(body, &a); err != nil {
		return Answer{}, err
	}
	if a.Outcome == "" {
		return Answer{}, &strictjson.Error{Field: "outcome", Message: "required"}
	}
	return a, nil
}

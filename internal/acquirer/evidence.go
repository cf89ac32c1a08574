package acquirer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// An answer of the acquirer is evidence, not an outcome: before anything is
// stored, it is compared with what was asked and with itself. This file is
// the one place those comparisons are written.
//
// The HTTP status and the body's status must pair as the endpoint's table
// says (answerTable):
//
//	authorize      POST /v1/authorizations        200 or 201 with "captured" (or "authorized", asked without the capture); 402 with "declined"
//	lookup         GET  /v1/authorizations/{key}  200 with "captured", "authorized" or "declined"; 404 is "not found"
//	refund         POST /v1/refunds               200 or 201 with "succeeded"; 402 with "declined"
//	refund_lookup  GET  /v1/refunds/{key}         200 with "succeeded" or "declined"; 404 is "not found"
//	capture        POST /v1/captures              200 or 201 with "succeeded"; 402 with "declined"
//	capture_lookup GET  /v1/captures/{key}        200 with "succeeded" or "declined"; 404 is "not found"
//	void           POST /v1/voids                 200 or 201 with "succeeded"; 402 with "declined"
//	void_lookup    GET  /v1/voids/{key}           200 with "succeeded" or "declined"; 404 is "not found"
//
// Any other pairing of a known status with a known body status is a
// mismatch. An HTTP status the table does not name for the endpoint, or a
// body status the endpoint never answers with, proves nothing and stays
// ErrOutcomeUnknown, to be looked up again.
//
// The terms (CheckTerms) must be the ones asked: the amount in minor units,
// exactly, and the currency as the ISO 4217 alpha-3 code that was sent,
// compared byte for byte with no case folding ("brl" is not "BRL": an
// acquirer that answers in another spelling is read as saying something
// else). Every answer states them, a decline included: a decline that omits
// the amount or the currency is a mismatch, so no ledger row ever states
// terms the acquirer did not report. Where the acquirer echoes the
// idempotency key it was sent (the sandbox does), the echo must be that key;
// an answer without an echo is not checked for it. A refund must also name
// the authorization it refunds, and it must be the one asked
// (CheckRefundTerms).

// ErrMismatch: the acquirer answered, but the answer disagrees with what was
// asked (amount, currency, key) or with itself (its HTTP status against its
// body). Money may have moved on terms nobody asked for, and the caller
// cannot know which side is right: nothing is to be stored as an outcome,
// and a person must decide. Errors wrapping it are *MismatchError.
var ErrMismatch = errors.New("the acquirer's answer disagrees with the request")

// MismatchError is an answer that disagrees, with what it said.
type MismatchError struct {
	// Reason names the first disagreement found (the Reason constants).
	Reason string
	// Endpoint is EndpointAuthorize or EndpointLookup.
	Endpoint string
	// HTTPStatus is the answer's status code.
	HTTPStatus int
	// Stated is the authorization as the acquirer stated it.
	Stated Authorization
}

func (e *MismatchError) Error() string {
	return mismatchText(e.Reason, e.Endpoint, e.HTTPStatus, e.Stated.Status)
}

// mismatchText is a mismatch's error text: the reason, and what answered
// with what (the HTTP status only where there was one, and the endpoint
// only where an answer came over HTTP).
func mismatchText(reason, endpoint string, httpStatus int, status string) string {
	answered := "answered"
	if endpoint != "" {
		answered = endpoint + " answered"
	}
	if httpStatus != 0 {
		answered += fmt.Sprintf(" %d", httpStatus)
	}
	if status == "" {
		status = "no status"
	}
	return fmt.Sprintf("%s: %s (%s %s)", ErrMismatch, reason, answered, status)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// The reasons of a MismatchError.
const (
	ReasonStatusPairing = "http_status_disagrees_with_body"
	ReasonAmount        = "amount_differs"
	ReasonCurrency      = "currency_differs"
	ReasonTermsMissing  = "terms_missing"
	ReasonKey           = "idempotency_key_differs"
	ReasonAuthorization = "authorization_differs"
	// ReasonCapture: an authorization held that was asked to be captured,
	// or captured that was asked to be held (Request.Capture).
	ReasonCapture = "capture_differs"
)

// The endpoints, as a MismatchError names them.
const (
	EndpointAuthorize     = "authorize"
	EndpointLookup        = "lookup"
	EndpointRefund        = "refund"
	EndpointRefundLookup  = "refund_lookup"
	EndpointCapture       = "capture"
	EndpointCaptureLookup = "capture_lookup"
	EndpointVoid          = "void"
	EndpointVoidLookup    = "void_lookup"
)

// The HTTP statuses that may carry an answer (net/http's values; this
// package knows no transport).
const (
	statusOK              = 200
	statusCreated         = 201
	statusPaymentRequired = 402
)

// answerTable: for each endpoint, the HTTP statuses that carry an
// authorization or a refund, and the body statuses each may carry.
var answerTable = map[string]map[int][]string{
	EndpointAuthorize: {
		statusOK:              {StatusCaptured, StatusAuthorized},
		statusCreated:         {StatusCaptured, StatusAuthorized},
		statusPaymentRequired: {StatusDeclined},
	},
	EndpointLookup: {
		statusOK: {StatusCaptured, StatusAuthorized, StatusDeclined},
	},
	EndpointRefund: {
		statusOK:              {RefundSucceeded},
		statusCreated:         {RefundSucceeded},
		statusPaymentRequired: {RefundDeclined},
	},
	EndpointRefundLookup: {
		statusOK: {RefundSucceeded, RefundDeclined},
	},
	EndpointCapture: {
		statusOK:              {CaptureSucceeded},
		statusCreated:         {CaptureSucceeded},
		statusPaymentRequired: {CaptureDeclined},
	},
	EndpointCaptureLookup: {
		statusOK: {CaptureSucceeded, CaptureDeclined},
	},
	EndpointVoid: {
		statusOK:              {VoidSucceeded},
		statusCreated:         {VoidSucceeded},
		statusPaymentRequired: {VoidDeclined},
	},
	EndpointVoidLookup: {
		statusOK: {VoidSucceeded, VoidDeclined},
	},
}

// carriesAnswer reports whether status, on endpoint, is an answer
// with an authorization (or, on a refund's endpoint, a refund) in its body.
func carriesAnswer(endpoint string, status int) bool {
	_, ok := answerTable[endpoint][status]
	return ok
}

// checkPairing: the body's status is one the HTTP status may carry. a has
// a known body status (decode refuses any other).
func checkPairing(endpoint string, status int, a Authorization) error {
	if !pairs(endpoint, status, a.Status) {
		return &MismatchError{Reason: ReasonStatusPairing, Endpoint: endpoint, HTTPStatus: status, Stated: a}
	}
	return nil
}

// pairs reports whether the body status may come with the HTTP status on
// endpoint.
func pairs(endpoint string, status int, bodyStatus string) bool {
	return slices.Contains(answerTable[endpoint][status], bodyStatus)
}

// CheckTerms compares an authorization with what was asked under key: the
// amount and the currency, the echoed key where there is one (see the
// rules at the top of this file), and whether it was captured as asked.
// It returns nil or a *MismatchError whose Endpoint and HTTPStatus are the
// caller's to fill (an in-process acquirer has none). Every path that reads an authorization calls it: authorize,
// the take-over's lookup, the reconciler's; an operator's accept calls
// CheckSelf instead.
func CheckTerms(a Authorization, key string, asked Request) error {
	if err := CheckSelf(a, key); err != nil {
		return err
	}
	reason := ""
	switch {
	case a.Amount != asked.Amount:
		reason = ReasonAmount
	case a.Currency != asked.Currency:
		reason = ReasonCurrency
	case a.Status != StatusDeclined && (a.Status == StatusAuthorized) != asked.AuthorizeOnly():
		reason = ReasonCapture
	default:
		return nil
	}
	return &MismatchError{Reason: reason, Stated: a}
}

// CheckSelf is what an authorization must say whatever was asked: its
// terms (an amount and a currency), and the key it was asked under where
// it echoes one. An operator who accepts the acquirer's terms over the
// request's still needs an answer that agrees with itself.
func CheckSelf(a Authorization, key string) error {
	switch {
	case a.IdempotencyKey != "" && a.IdempotencyKey != key:
		return &MismatchError{Reason: ReasonKey, Stated: a}
	case a.Amount <= 0 || a.Currency == "":
		return &MismatchError{Reason: ReasonTermsMissing, Stated: a}
	}
	return nil
}

// Evidence is a mismatch as it is kept for an operator: what was asked
// and what the acquirer said, as JSON. It holds no card data: the payment
// method is not in it.
func (e *MismatchError) Evidence(key string, asked Request) []byte {
	return evidence(e.Reason, e.Endpoint, e.HTTPStatus, askedTerms{asked.Amount, asked.Currency, key}, e.Stated)
}

// evidence is the JSON an operator reads of a mismatch.
func evidence(reason, endpoint string, httpStatus int, asked, answer any) []byte {
	b, err := json.Marshal(struct {
		Reason     string `json:"reason"`
		Endpoint   string `json:"endpoint,omitempty"`
		HTTPStatus int    `json:"http_status,omitempty"`
		Asked      any    `json:"asked"`
		Answer     any    `json:"answer"`
	}{reason, endpoint, httpStatus, asked, answer})
	if err != nil { // strings, numbers and a time
		panic(err)
	}
	return b
}

type askedTerms struct {
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency"`
	IdempotencyKey string `json:"idempotency_key"`
}

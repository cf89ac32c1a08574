package strictjson_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/idempotent-payments/idempay/internal/strictjson"
)

type doc struct {
	Amount   jsontext.Value `json:"amount"`
	Currency *string        `json:"currency"`
	Count    int            `json:"count"`
}

// TestRefusals holds every refusal the parsers above rely on: most are
// defaults of the library that a change of version could loosen.
func TestRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, field, message string
	}{
		{"duplicate name", `{"amount":100,"amount":99999999}`, "amount", "duplicate member"},
		{"duplicate name nested", `{"amount":[{"a":1,"a":2}]}`, "amount/0/a", "duplicate member"},
		{"case variant", `{"amount":100,"AMOUNT":99999999}`, "AMOUNT", `unknown member: names are case-sensitive (did you mean "amount"?)`},
		{"case variant alone", `{"Currency":"BRL"}`, "Currency", `unknown member: names are case-sensitive (did you mean "currency"?)`},
		{"unknown name", `{"tip":5}`, "tip", "unknown member"},
		{"invisible name", "{\"amo\u200bunt\":5}", "(a long or unprintable name)", "unknown member"},
		{"invalid UTF-8", "{\"currency\":\"BR\xff\"}", "currency", "invalid UTF-8"},
		{"encoded surrogate", "{\"currency\":\"\xed\xa0\x80\"}", "currency", "invalid UTF-8"},
		{"lone high surrogate", `{"currency":"\ud800"}`, "currency", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
		{"lone low surrogate", `{"currency":"\udc00x"}`, "currency", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
		{"trailing value", `{"count":1} {}`, "", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
		{"truncated", `{"count":1`, "", "unexpected end of JSON"},
		{"empty", ``, "", "unexpected end of JSON"},
		{"not an object", `[1]`, "", "must be a JSON object"},
		{"null", `null`, "", "must be a JSON object"},
		{"null among white space", " null\n", "", "must be a JSON object"},
		{"wrong type", `{"currency":5}`, "currency", "must be a JSON string"},
		{"string for number", `{"count":"5"}`, "count", "must be a JSON number"},
	} {
		var d doc
		err := strictjson.Unmarshal([]byte(tc.in), &d)
		var e *strictjson.Error
		if !errors.As(err, &e) || e.Field != tc.field || e.Message != tc.message {
			t.Errorf("%s: %q → %#v, want field %q message %q", tc.name, tc.in, err, tc.field, tc.message)
		}
	}
}

func TestAccepts(t *testing.T) {
	t.Parallel()
	var d doc
	if err := strictjson.Unmarshal([]byte(" {\"currency\":\"BRL\", \"amount\": 1e3 ,\"count\":2}\n\t"), &d); err != nil {
		t.Fatal(err)
	}
	if string(d.Amount) != "1e3" || *d.Currency != "BRL" || d.Count != 2 {
		t.Fatalf("decoded %+v", d)
	}
}

// TestUnmarshalResponse: an answer may carry members we do not know, never a
// name that means two things.
func TestUnmarshalResponse(t *testing.T) {
	t.Parallel()
	var d doc
	if err := strictjson.UnmarshalResponse([]byte(`{"currency":"BRL","risk":{"score":1,"Currency":"x"}}`), &d); err != nil || *d.Currency != "BRL" {
		t.Fatalf("unknown members: %+v, %v", d, err)
	}
	for in, field := range map[string]string{
		`{"currency":"BRL","Currency":"USD"}`: "Currency",
		`{"currency":"BRL","currency":"USD"}`: "currency",
		"{\"currency\":\"BR\xff\"}":           "currency",
		`{"currency":"BRL"} {}`:               "",
	} {
		var e *strictjson.Error
		if err := strictjson.UnmarshalResponse([]byte(in), &doc{}); !errors.As(err, &e) || e.Field != field {
			t.Errorf("UnmarshalResponse(%q) = %v, want a refusal at %q", in, err, field)
		}
	}
}

// TestUnmarshalEvent: an event may carry members we do not know, in any
// case, at any depth; never a duplicate, an invalid byte or a second value.
func TestUnmarshalEvent(t *testing.T) {
	t.Parallel()
	var d doc
	if err := strictjson.UnmarshalEvent([]byte(`{"currency":"BRL","Amount":2,"risk":{"score":1}}`), &d); err != nil || *d.Currency != "BRL" || d.Amount != nil {
		t.Fatalf("unknown members: %+v, %v", d, err)
	}
	for in, field := range map[string]string{
		`{"currency":"BRL","currency":"USD"}`: "currency",
		`{"risk":{"a":1,"a":2}}`:              "risk/a",
		"{\"currency\":\"BR\xff\"}":           "currency",
		`{"currency":"\ud800"}`:               "currency",
		`{"currency":"BRL"} {}`:               "",
		`null`:                                "",
	} {
		var e *strictjson.Error
		if err := strictjson.UnmarshalEvent([]byte(in), &doc{}); !errors.As(err, &e) || e.Field != field {
			t.Errorf("UnmarshalEvent(%q) = %v, want a refusal at %q", in, err, field)
		}
	}
}

// FuzzUnmarshal: never a panic; a refusal is always an *Error; an accepted
// document decodes again, re-encoded, to the same value, and is an accepted
// answer too; an accepted answer is an accepted event, of the same value.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{`{"amount":1,"currency":"BRL","count":2}`, `{"amount":1,"amount":2}`, `{"AMOUNT":1}`, "{\"currency\":\"\xff\"}", `{"currency":"\ud800"}`, `{} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var answer doc
		answerErr := strictjson.UnmarshalResponse(b, &answer)
		var e *strictjson.Error
		if answerErr != nil && !errors.As(answerErr, &e) {
			t.Fatalf("UnmarshalResponse: untyped error %T %v", answerErr, answerErr)
		}
		var ev doc
		eventErr := strictjson.UnmarshalEvent(b, &ev)
		if eventErr != nil && !errors.As(eventErr, &e) {
			t.Fatalf("UnmarshalEvent: untyped error %T %v", eventErr, eventErr)
		}
		if answerErr == nil && (eventErr != nil || !reflect.DeepEqual(canon(answer), canon(ev))) {
			t.Fatalf("%q: UnmarshalResponse %+v, UnmarshalEvent %+v, %v", b, answer, ev, eventErr)
		}
		var d doc
		err := strictjson.Unmarshal(b, &d)
		if err == nil && (answerErr != nil || !reflect.DeepEqual(canon(answer), canon(d))) {
			t.Fatalf("%q: Unmarshal %+v, UnmarshalResponse %+v, %v", b, d, answer, answerErr)
		}
		if err != nil {
			var e *strictjson.Error
			if !errors.As(err, &e) {
				t.Fatalf("untyped error %T %v", err, err)
			}
			return
		}
		enc, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", d, err)
		}
		var again doc
		if err := strictjson.Unmarshal(enc, &again); err != nil || !reflect.DeepEqual(canon(again), canon(d)) {
			t.Fatalf("%q re-encoded as %q decodes to %+v, %v", b, enc, again, err)
		}
	})
}

// canon makes two decodings comparable: the raw amount compacted, an absent
// amount the same as null.
func canon(d doc) doc {
	v := jsontext.Value(append([]byte(nil), d.Amount...))
	if len(v) == 0 {
		v = jsontext.Value("null")
	}
	_ = v.Compact()
	d.Amount = v
	return d
}

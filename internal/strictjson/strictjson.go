// Package strictjson decodes untrusted JSON so that no document can mean two
// things to two readers. It is a thin layer over github.com/go-json-experiment/json
// (the basis of encoding/json/v2) that fixes the options every caller must
// use and turns the decoder's errors into one field-level Error.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error is why a document was refused, located at one member.
type Error struct {
	// Field is the path of the offending member, its names joined with "/"
	// ("amount", "request/currency"); "" for the document as a whole.
	Field string
	// Message says what is wrong without echoing the document's values.
	Message string
	// Syntax is true when the document is not well-formed JSON (a syntax
	// error, a duplicate name, invalid UTF-8) and Field is where the
	// decoder stood: inside the value of that member.
	Syntax bool
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "json: " + e.Message
	}
	return "json: " + e.Field + ": " + e.Message
}

// options are the decoder's settings. All but RejectUnknownMembers are the
// library's defaults, named here so that a change of default cannot loosen
// a parser; a test holds the behaviour of each.
var options = json.JoinOptions(
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
	json.MatchCaseInsensitiveNames(false),
	json.RejectUnknownMembers(true),
)

// Unmarshal decodes exactly one JSON value from b into v, a pointer to a
// struct whose members are named by `json` tags. It refuses, with an *Error:
// duplicate member names (at any depth), names that match no member exactly
// (at the top level, a name that differs from a member's only by case is
// reported as such),
// invalid UTF-8, escapes that are lone surrogates, any syntax error, and
// anything but white space after the value, and a null value (it would
// otherwise decode into v as if every member were absent). Values are
// checked against the Go types of v's fields; v is unspecified after an
// error.
func Unmarshal(b []byte, v any) error {
	err := json.Unmarshal(b, v, options)
	if err != nil {
		return describe(err, b, v)
	}
	return notNull(b, v)
}

// notNull refuses a null that decoded into v: an object is wanted where v
// is a struct, and a value in any case.
func notNull(b []byte, v any) error {
	if trimmed := bytes.TrimLeft(b, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == 'n' {
		return &Error{Message: "must be a JSON " + kindName(reflect.TypeOf(v))}
	}
	return nil
}

// UnmarshalResponse is Unmarshal for the answer of a system we call, which may
// add members as its API grows: unknown top-level members are ignored.
// Everything else Unmarshal refuses is still refused, a case variant of a
// known name included (another reader would take "Status" for "status").
func UnmarshalResponse(b []byte, v any) error {
	if err := json.Unmarshal(b, v, options, json.RejectUnknownMembers(false)); err != nil {
		return describe(err, b, v)
	}
	if err := notNull(b, v); err != nil {
		return err
	}
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	if _, err := dec.ReadToken(); err != nil {
		return describe(err, b, v)
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return describe(err, b, v)
		}
		if known := caseVariantOf(name.String(), "", v); known != "" {
			return &Error{Field: fieldOf(jsontext.Pointer("").AppendToken(name.String())), Message: fmt.Sprintf("unknown member: names are case-sensitive (did you mean %q?)", known)}
		}
		if err := dec.SkipValue(); err != nil {
			return describe(err, b, v)
		}
	}
	return nil
}

// UnmarshalEvent is Unmarshal for an event an AWS service builds (API
// Gateway's, SQS's): its members are the service's, named exactly, and
// unknown ones, which a new version of the event may add at any depth, are
// ignored. A name that differs from a member's only by case is such an
// unknown member: the service never writes one, so it is not looked for
// (UnmarshalResponse looks, at the cost of a second pass). Duplicate
// names, invalid UTF-8, lone surrogates, syntax errors, trailing data and
// a null are refused as Unmarshal refuses them, where encoding/json would
// keep the last duplicate, replace invalid bytes and read "Body" as
// "body".
func UnmarshalEvent(b []byte, v any) error {
	if err := json.Unmarshal(b, v, options, json.RejectUnknownMembers(false)); err != nil {
		return describe(err, b, v)
	}
	return notNull(b, v)
}

// describe turns a decoder error into an *Error.
func describe(err error, b []byte, v any) *Error {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &syn):
		field := fieldOf(syn.JSONPointer)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return &Error{Field: field, Message: "duplicate member", Syntax: true}
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			return &Error{Field: field, Message: "unexpected end of JSON", Syntax: true}
		case !utf8.Valid(b):
			return &Error{Field: field, Message: "invalid UTF-8", Syntax: true}
		}
		// A lone surrogate escape, an invalid character or trailing data.
		// The decoder's own text would quote the document, and an offset
		// would differ between a body and the same body inside a message.
		return &Error{Field: field, Message: "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)", Syntax: true}
	case errors.As(err, &sem):
		field := fieldOf(sem.JSONPointer)
		if errors.Is(sem.Err, json.ErrUnknownName) {
			name := sem.JSONPointer.LastToken()
			if known := caseVariantOf(name, sem.JSONPointer.Parent(), v); known != "" {
				return &Error{Field: field, Message: fmt.Sprintf("unknown member: names are case-sensitive (did you mean %q?)", known)}
			}
			return &Error{Field: field, Message: "unknown member"}
		}
		if field == "" {
			return &Error{Message: "must be a JSON " + kindName(reflect.TypeOf(v))}
		}
		return &Error{Field: field, Message: "must be a JSON " + kindName(sem.GoType)}
	}
	return &Error{Message: "invalid JSON"}
}

// maxFieldLen bounds a member name echoed back in Field.
const maxFieldLen = 64

// fieldOf renders a JSON pointer as a field path. A name that is long or
// holds characters a reader cannot see is not echoed.
func fieldOf(p jsontext.Pointer) string {
	var parts []string
	for tok := range p.Tokens() {
		if len(tok) > maxFieldLen || strings.IndexFunc(tok, invisible) >= 0 {
			tok = "(a long or unprintable name)"
		}
		parts = append(parts, tok)
	}
	return strings.Join(parts, "/")
}

func invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
}

// caseVariantOf returns the member of v's top-level struct that name matches
// only when case is ignored, or "".
func caseVariantOf(name string, parent jsontext.Pointer, v any) string {
	if parent != "" {
		return "" // only the top level is a struct here; nested values are raw
	}
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	for _, tag := range namesOf(t) {
		if tag != name && strings.EqualFold(tag, name) {
			return tag
		}
	}
	return ""
}

// names holds, for each struct type decoded so far, the member names its
// json tags give (namesOf). Its size is bounded by the struct types in the
// program that are decoded here, a handful, never by the input.
var names sync.Map // reflect.Type → []string

// namesOf is the member names of struct type t's json tags, read from its
// tags once: reading a tag parses it, which cost half of an acquirer
// answer's decoding when done for each member of each answer.
func namesOf(t reflect.Type) []string {
	if known, ok := names.Load(t); ok {
		return known.([]string)
	}
	var tags []string
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			tags = append(tags, tag)
		}
	}
	names.Store(t, tags)
	return tags
}

// kindName names the JSON kind a Go type decodes from.
func kindName(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "value"
}

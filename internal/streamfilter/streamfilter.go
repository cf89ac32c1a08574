// Package streamfilter is which changes of the table's stream reach the
// publisher: Lambda's filter patterns, as the CDK app deploys them, and
// Match, which applies them to a record as the local stack's stream reader
// does. It reads only the table's definition, so the CDK app imports it
// without the SDK.
package streamfilter

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// Filters are the stream trigger's filter criteria, Lambda's event
// filtering patterns over a stream record: the changes that may make an
// event (outbox.Events), and no other, so the publisher is not invoked for the
// claims, completions and take-overs that make none. A record that
// matches any pattern is delivered. The CDK app deploys them, and the
// local stack's stream reader applies them with Match, so both deliver the
// same records.
var Filters = []string{
	// a ledger row inserted
	fmt.Sprintf(`{"eventName":["INSERT"],"dynamodb":{"Keys":{%q:{"S":[{"prefix":%q}]}}}}`, tabledef.KeyAttribute, tabledef.LedgerPrefix),
	// a record that becomes held
	fmt.Sprintf(`{"eventName":["INSERT","MODIFY"],"dynamodb":{"Keys":{%q:{"S":[{"prefix":%q}]}},`+
		`"NewImage":{"hold":{"M":{"reason":{"S":[{"exists":true}]}}}},"OldImage":{"hold":{"M":{"reason":{"S":[{"exists":false}]}}}}}}`, tabledef.KeyAttribute, idem.RecordPrefix),
	// a held record deleted
	fmt.Sprintf(`{"eventName":["REMOVE"],"dynamodb":{"Keys":{%q:{"S":[{"prefix":%q}]}},"OldImage":{"hold":{"M":{"reason":{"S":[{"exists":true}]}}}}}}`, tabledef.KeyAttribute, idem.RecordPrefix),
}

// Match reports whether record, a stream record as JSON (Lambda's
// DynamoDBEventRecord), matches any of Filters. It implements the part of
// Lambda's filter syntax that Filters use: a list of exact strings,
// {"prefix": s} and {"exists": b} at a leaf, objects matched member by
// member; an error for anything else, so a pattern that outgrows it fails
// its test rather than filtering otherwise than Lambda.
//
// The record is DynamoDB Streams' own (through Lambda's event source
// mapping, or the local stack's reader of the same API), not a client's
// bytes, so it is read with encoding/json rather than the strict decoder
// of the door.
func Match(record []byte) (bool, error) {
	var doc any
	if err := json.Unmarshal(record, &doc); err != nil {
		return false, fmt.Errorf("stream record: %w", err)
	}
	for i, pattern := range patterns {
		ok, err := matchObject(pattern, doc)
		if err != nil {
			return false, fmt.Errorf("filter %s: %w", Filters[i], err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// patterns are Filters, parsed once: this package's own constants, so one
// that does not parse is a bug found at start-up.
var patterns = func() []map[string]any {
	out := make([]map[string]any, len(Filters))
	for i, f := range Filters {
		if err := json.Unmarshal([]byte(f), &out[i]); err != nil {
			panic(fmt.Sprintf("filter %s: %v", f, err))
		}
	}
	return out
}()

func matchObject(pattern map[string]any, doc any) (bool, error) {
	obj, _ := doc.(map[string]any)
	for name, p := range pattern {
		var value any
		present := false
		if obj != nil {
			value, present = obj[name]
		}
		switch p := p.(type) {
		case map[string]any:
			ok, err := matchObject(p, value)
			if err != nil || !ok {
				return false, err
			}
		case []any:
			ok, err := matchLeaf(p, value, present)
			if err != nil || !ok {
				return false, err
			}
		default:
			return false, fmt.Errorf("member %q: want an object or a list", name)
		}
	}
	return true, nil
}

// matchLeaf: any of the alternatives matches the value.
func matchLeaf(alternatives []any, value any, present bool) (bool, error) {
	for _, a := range alternatives {
		switch a := a.(type) {
		case string:
			if s, ok := value.(string); ok && s == a {
				return true, nil
			}
		case map[string]any:
			if len(a) != 1 {
				return false, fmt.Errorf("a rule of %d members", len(a))
			}
			for op, arg := range a {
				switch op {
				case "prefix":
					s, ok := value.(string)
					p, isString := arg.(string)
					if !isString {
						return false, fmt.Errorf("prefix %v", arg)
					}
					if ok && strings.HasPrefix(s, p) {
						return true, nil
					}
				case "exists":
					want, ok := arg.(bool)
					if !ok {
						return false, fmt.Errorf("exists %v", arg)
					}
					if present == want {
						return true, nil
					}
				default:
					return false, fmt.Errorf("rule %q is not implemented here", op)
				}
			}
		default:
			return false, fmt.Errorf("alternative %v", a)
		}
	}
	return false, nil
}

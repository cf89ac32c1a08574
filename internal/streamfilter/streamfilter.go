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

// Set is the stream trigger's filter criteria of one region's publisher,
// Lambda's event filtering patterns over a stream record: the changes
// that may make an event (outbox.Events), and no other, so the publisher
// is not invoked for the claims, completions and take-overs that make
// none. A record that matches any pattern is delivered. The CDK app
// deploys them, and the local stack's stream reader applies them with
// Match, so both deliver the same records.
type Set struct {
	patterns []string
	parsed   []map[string]any
}

// For is the set of region's publisher. In one region (region empty) it
// passes every operation's row inserted (tabledef.Rows) (by the item's type: a
// marker put under a row's key is no row); in the multi-region mode
// the rows region wrote (their region attribute), since each row's event
// is published once, by the region that wrote it, and another region
// takes over only from the unpublished index; and the rows written with
// no region (an operator's accept, from a shell), which no region would
// take over, so every region publishes them. Holds, releases and an
// authorization's row marked expired pass in every region. A set has at most MaxPatterns patterns.
func For(region string) Set {
	rowPattern := func(region string) string {
		var prefixes, types []string
		for _, r := range tabledef.Rows() {
			prefixes = append(prefixes, fmt.Sprintf(`{"prefix":%q}`, r.Prefix))
			types = append(types, fmt.Sprintf("%q", r.Type))
		}
		image := fmt.Sprintf(`%q:{"S":[%s]}`, tabledef.TypeAttribute, strings.Join(types, ","))
		if region != "" {
			image += "," + region
		}
		return fmt.Sprintf(`{"eventName":["INSERT"],"dynamodb":{"Keys":{%q:{"S":[%s]}},"NewImage":{%s}}}`, tabledef.KeyAttribute, strings.Join(prefixes, ","), image)
	}
	// every operation's row inserted
	rows := []string{rowPattern("")}
	if region != "" {
		rows = []string{
			// the region's rows
			rowPattern(fmt.Sprintf(`%q:{"S":[%q]}`, tabledef.RegionAttribute, region)),
			// rows of no region (an operator's accept from a shell)
			rowPattern(fmt.Sprintf(`%q:{"S":[{"exists":false}]}`, tabledef.RegionAttribute)),
		}
	}
	patterns := append(rows,
		// a record that becomes held
		fmt.Sprintf(`{"eventName":["INSERT","MODIFY"],"dynamodb":{"Keys":{%q:{"S":[{"prefix":%q}]}},"NewImage":%s,"OldImage":%s}}`,
			tabledef.KeyAttribute, idem.RecordPrefix, holdReason(true), holdReason(false)),
		// a held record deleted
		fmt.Sprintf(`{"eventName":["REMOVE"],"dynamodb":{"Keys":{%q:{"S":[{"prefix":%q}]}},"OldImage":%s}}`,
			tabledef.KeyAttribute, idem.RecordPrefix, holdReason(true)),
		// an authorization's row marked expired
		fmt.Sprintf(`{"eventName":["MODIFY"],"dynamodb":{"Keys":{%q:{"S":[{"prefix":%q}]}},"NewImage":%s,"OldImage":%s}}`,
			tabledef.KeyAttribute, tabledef.LedgerPrefix, expiredMark(true), expiredMark(false)),
	)
	s := Set{patterns: patterns, parsed: make([]map[string]any, len(patterns))}
	for i, p := range patterns {
		if err := json.Unmarshal([]byte(p), &s.parsed[i]); err != nil {
			panic(fmt.Sprintf("filter %s: %v", p, err)) // the package's own patterns: a bug
		}
	}
	return s
}

// holdReason is the pattern of an image whose hold has a reason (exists)
// or has none.
func holdReason(exists bool) string {
	return fmt.Sprintf(`{%q:{"M":{%q:{"S":[{"exists":%t}]}}}}`, tabledef.HoldAttribute, tabledef.HoldReasonAttribute, exists)
}

// expiredMark is the pattern of an image with the expiry's mark (exists)
// or without it.
func expiredMark(exists bool) string {
	return fmt.Sprintf(`{%q:{"N":[{"exists":%t}]}}`, tabledef.ExpiredAttribute, exists)
}

// MaxPatterns is how many filter patterns Lambda takes on one event source
// mapping by default.
const MaxPatterns = 5

// Patterns are the set's patterns, as the trigger's filter criteria take
// them.
func (s Set) Patterns() []string { return s.patterns }

// Match reports whether record, a stream record as JSON (Lambda's
// DynamoDBEventRecord), matches any of the set's patterns. It implements
// the part of Lambda's filter syntax that the patterns use: a list of
// exact strings, {"prefix": s} and {"exists": b} at a leaf, objects
// matched member by member; an error for anything else, so a pattern that
// outgrows it fails its test rather than filtering otherwise than Lambda.
//
// The record is DynamoDB Streams' own (through Lambda's event source
// mapping, or the local stack's reader of the same API), not a client's
// bytes, so it is read with encoding/json rather than the strict decoder
// of the door.
func (s Set) Match(record []byte) (bool, error) {
	var doc any
	if err := json.Unmarshal(record, &doc); err != nil {
		return false, fmt.Errorf("stream record: %w", err)
	}
	for i, pattern := range s.parsed {
		ok, err := matchObject(pattern, doc)
		if err != nil {
			return false, fmt.Errorf("filter %s: %w", s.patterns[i], err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

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

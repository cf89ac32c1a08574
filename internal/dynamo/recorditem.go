package dynamo

import (
	"errors"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A record's item is written and read by hand, field by field, where
// attributevalue reflects over the record's 26 fields: every claim writes
// one and every replay reads one (BenchmarkRecordItem). FuzzRecordItem
// holds both directions equal to attributevalue's MarshalMap and
// UnmarshalMap, which remain the definition; the hold, rare, is still
// theirs.

// errEmptyMapKey is what attributevalue refuses to write: a map attribute
// (response_headers, response_result) with an empty key.
var errEmptyMapKey = errors.New("map key cannot be empty")

// item is r as attributevalue.MarshalMap writes it: every field without
// omitempty present (a nil request as NULL), the others only when set.
func (r record) item() (map[string]types.AttributeValue, error) {
	av := make(map[string]types.AttributeValue, 26)
	av["pk"] = str(r.PK)
	av["operation"] = str(r.Operation)
	av["account"] = str(r.Account)
	av["idempotency_key"] = str(r.Key)
	setS(av, "source", r.Source)
	av["status"] = str(r.Status)
	av["fingerprint"] = r.Fingerprint.attributeValue()
	av["request"] = &types.AttributeValueMemberNULL{Value: true}
	if r.Request != nil {
		av["request"] = &types.AttributeValueMemberB{Value: append([]byte{}, r.Request...)}
	}
	av["lease_token"] = str(r.LeaseToken)
	av["lease_expires_at"] = num(r.LeaseExpiresAt)
	av["attempt"] = num(int64(r.Attempt))
	av["downstream_key"] = r.DownstreamKey.attributeValue()
	setN(av, "in_transit_bound", r.InTransitBoundMs)
	setN(av, "clock_skew", r.ClockSkewMs)
	setS(av, "downstream", r.Downstream)
	if r.Hold != nil {
		h, err := attributevalue.Marshal(r.Hold)
		if err != nil {
			return nil, err
		}
		av["hold"] = h
	}
	setN(av, "response_status", int64(r.ResponseStatus))
	if err := setStrings(av, "response_headers", r.ResponseHeaders); err != nil {
		return nil, err
	}
	if err := setStrings(av, "response_result", r.ResponseResult); err != nil {
		return nil, err
	}
	if r.ResponseBody != nil {
		av["response_body"] = &types.AttributeValueMemberB{Value: append([]byte{}, r.ResponseBody...)}
	}
	av["created_at"] = num(r.CreatedAt)
	setN(av, "expires_at", r.ExpiresAt)
	setS(av, "expiry_bucket", r.ExpiryBucket)
	setS(av, "inflight_shard", r.InflightShard)
	setN(av, "stale_at", r.StaleAt)
	setN(av, "reconcile_attempts", int64(r.ReconcileAttempts))
	return av, nil
}

// setS and setN write an omitempty field: only when it is not zero.
func setS(av map[string]types.AttributeValue, name, s string) {
	if s != "" {
		av[name] = str(s)
	}
}

func setN(av map[string]types.AttributeValue, name string, n int64) {
	if n != 0 {
		av[name] = num(n)
	}
}

// setStrings writes an omitempty map of strings: only when it is not nil,
// and never with an empty key.
func setStrings(av map[string]types.AttributeValue, name string, m map[string]string) error {
	if m == nil {
		return nil
	}
	values := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		if k == "" {
			return errEmptyMapKey
		}
		values[k] = str(v)
	}
	av[name] = &types.AttributeValueMemberM{Value: values}
	return nil
}

// attributeValue is h as its MarshalDynamoDBAttributeValue writes it.
func (h hexBinary) attributeValue() types.AttributeValue {
	av, _ := h.MarshalDynamoDBAttributeValue() // never fails
	return av
}

// readRecord reads av as attributevalue.UnmarshalMap reads it into a
// record. Each attribute of the types the record's fields are written
// with is read here; an item with any other (a NULL, a number where a
// string was written, a name that differs from a field's only in case) is
// read by attributevalue instead, by rules of its own. Attributes that
// name no field are ignored, as attributevalue ignores them.
func readRecord(av map[string]types.AttributeValue) (record, error) {
	var r record
	for name, v := range av {
		if !r.read(name, v) {
			var slow record
			err := attributevalue.UnmarshalMap(av, &slow)
			return slow, err
		}
	}
	return r, nil
}

// read sets the field that name names from v, and reports whether it
// could: false where attributevalue must decide.
func (r *record) read(name string, v types.AttributeValue) bool {
	switch name {
	case "pk":
		return readS(v, &r.PK)
	case "operation":
		return readS(v, &r.Operation)
	case "account":
		return readS(v, &r.Account)
	case "idempotency_key":
		return readS(v, &r.Key)
	case "source":
		return readS(v, &r.Source)
	case "status":
		return readS(v, &r.Status)
	case "fingerprint":
		return r.Fingerprint.UnmarshalDynamoDBAttributeValue(v) == nil
	case "request":
		return readB(v, &r.Request)
	case "lease_token":
		return readS(v, &r.LeaseToken)
	case "lease_expires_at":
		return readN(v, &r.LeaseExpiresAt)
	case "attempt":
		return readInt(v, &r.Attempt)
	case "downstream_key":
		return r.DownstreamKey.UnmarshalDynamoDBAttributeValue(v) == nil
	case "in_transit_bound":
		return readN(v, &r.InTransitBoundMs)
	case "clock_skew":
		return readN(v, &r.ClockSkewMs)
	case "downstream":
		return readS(v, &r.Downstream)
	case "hold":
		if _, ok := v.(*types.AttributeValueMemberM); !ok {
			return false
		}
		var h hold
		if attributevalue.Unmarshal(v, &h) != nil {
			return false
		}
		r.Hold = &h
		return true
	case "response_status":
		return readInt(v, &r.ResponseStatus)
	case "response_headers":
		return readStrings(v, &r.ResponseHeaders)
	case "response_body":
		return readB(v, &r.ResponseBody)
	case "response_result":
		return readStrings(v, &r.ResponseResult)
	case "created_at":
		return readN(v, &r.CreatedAt)
	case "expires_at":
		return readN(v, &r.ExpiresAt)
	case "expiry_bucket":
		return readS(v, &r.ExpiryBucket)
	case "inflight_shard":
		return readS(v, &r.InflightShard)
	case "stale_at":
		return readN(v, &r.StaleAt)
	case "reconcile_attempts":
		return readInt(v, &r.ReconcileAttempts)
	}
	for _, field := range recordAttributes {
		if strings.EqualFold(name, field) {
			return false // attributevalue matches names regardless of case
		}
	}
	return true
}

// recordAttributes are the record's attribute names, in its fields'
// order (TestRecordAttributes holds them to its tags).
var recordAttributes = []string{
	"pk", "operation", "account", "idempotency_key", "source", "status", "fingerprint", "request",
	"lease_token", "lease_expires_at", "attempt", "downstream_key", "in_transit_bound", "clock_skew",
	"downstream", "hold", "response_status", "response_headers", "response_body", "response_result",
	"created_at", "expires_at", "expiry_bucket", "inflight_shard", "stale_at", "reconcile_attempts",
}

func readS(v types.AttributeValue, out *string) bool {
	s, ok := v.(*types.AttributeValueMemberS)
	if ok {
		*out = s.Value
	}
	return ok
}

func readB(v types.AttributeValue, out *[]byte) bool {
	b, ok := v.(*types.AttributeValueMemberB)
	if ok {
		*out = append([]byte{}, b.Value...)
	}
	return ok
}

func readN(v types.AttributeValue, out *int64) bool {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return false
	}
	*out = i
	return true
}

func readInt(v types.AttributeValue, out *int) bool {
	var i int64
	if !readN(v, &i) || int64(int(i)) != i {
		return false
	}
	*out = int(i)
	return true
}

func readStrings(v types.AttributeValue, out *map[string]string) bool {
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return false
	}
	values := make(map[string]string, len(m.Value))
	for k, e := range m.Value {
		s, ok := e.(*types.AttributeValueMemberS)
		if !ok {
			return false
		}
		values[k] = s.Value
	}
	*out = values
	return true
}

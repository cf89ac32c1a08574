package dynamo

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestRecordAttributes holds recordAttributes to the record's tags.
func TestRecordAttributes(t *testing.T) {
	rt := reflect.TypeFor[record]()
	var tags []string
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("dynamodbav"), ",")
		tags = append(tags, name)
	}
	if !reflect.DeepEqual(tags, recordAttributes) {
		t.Errorf("the record's tags are %q, recordAttributes %q", tags, recordAttributes)
	}
}

// TestRecordItemHasEveryField: a record with every field set, by
// reflection, is written by hand as attributevalue writes it and read back
// whole, each of its attributes on the fast path (a field added to the
// record and left out of item or read fails here, where the fuzz test,
// which sets the fields it knows, would not see it).
func TestRecordItemHasEveryField(t *testing.T) {
	var r record
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("ab") // lower hex, so the hexBinary fields are written as bytes
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Slice:
			f.SetBytes([]byte{byte(i)})
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]string{"k": v.Type().Field(i).Name}))
		case reflect.Pointer:
			f.Set(reflect.ValueOf(&hold{Reason: "r", At: 1}))
		default:
			t.Fatalf("field %s: a kind (%s) this test does not set", v.Type().Field(i).Name, f.Kind())
		}
	}
	got, err := r.item()
	if err != nil {
		t.Fatal(err)
	}
	want, err := attributevalue.MarshalMap(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(recordAttributes) || !reflect.DeepEqual(got, want) {
		t.Fatalf("by hand %v\nattributevalue %v", got, want)
	}
	var back record
	for name, av := range got {
		if !back.read(name, av) {
			t.Errorf("%s: read by attributevalue, not by hand", name)
		}
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("read back %+v, want %+v", back, r)
	}
}

// completedRecord is a charge's record once completed, as a replay reads
// it.
func completedRecord() record {
	return record{
		PK: "IDEM#acct_1#charge#order-123-attempt", Operation: "charge", Account: "acct_1", Key: "order-123-attempt",
		Status: "COMPLETED", Fingerprint: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Request:    []byte(`{"amount":25000,"currency":"BRL","order_id":"order-123","payment_method":"pm_card_visa"}`),
		LeaseToken: "3f1c9a7e5b2d4f60", LeaseExpiresAt: 1796630400000, Attempt: 1,
		DownstreamKey: "c0ffee00c0ffee00c0ffee00c0ffee00", InTransitBoundMs: 10000, ClockSkewMs: 2000, Downstream: "sandbox",
		ResponseStatus: 201, ResponseHeaders: map[string]string{"Content-Type": "application/json", "Location": "/v1/charges/ch_1"},
		ResponseBody:   []byte(`{"id":"ch_1","status":"captured","amount":25000,"currency":"BRL","created_at":"2026-12-07T18:00:00Z"}`),
		ResponseResult: map[string]string{"charge_id": "ch_1"},
		CreatedAt:      1796630390000, ExpiresAt: 1796716790, ExpiryBucket: "expiry#07",
	}
}

// FuzzRecordItem holds the record's item, written and read by hand, equal
// to attributevalue's: a record built from the inputs is written both
// ways, then its item, changed by mutations (an attribute's type or
// value, a name unknown or differing in case), is read both ways.
func FuzzRecordItem(f *testing.F) {
	f.Add("IDEM#acct_1#charge#k", "c0ffee", []byte("{}"), int64(1796630400000), int64(0), uint16(0), "Content-Type", "application/json", []byte{})
	f.Add("", "", []byte(nil), int64(-1), int64(5), uint16(0xffff), "", "x", []byte{3, 1, 7, 2, 16, 5, 26, 0})
	f.Add("pk", "ABC", []byte{}, int64(0), int64(1<<62), uint16(0x5a5a), "k", "", []byte{0, 4, 1, 3, 11, 6, 27, 1})
	f.Fuzz(func(t *testing.T, s, hexish string, b []byte, n1, n2 int64, flags uint16, k, v string, mutations []byte) {
		r := fuzzRecord(s, hexish, b, n1, n2, flags, k, v)
		got, gotErr := r.item()
		want, wantErr := attributevalue.MarshalMap(r)
		if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
			t.Fatalf("writing %+v: by hand %v, %v; attributevalue %v, %v", r, got, gotErr, want, wantErr)
		}
		if wantErr != nil {
			return
		}
		mutate(want, mutations, s, n1)
		read, readErr := readRecord(want)
		var slow record
		slowErr := attributevalue.UnmarshalMap(want, &slow)
		if (readErr == nil) != (slowErr == nil) || (readErr == nil && !reflect.DeepEqual(read, slow)) {
			t.Fatalf("reading %v: by hand %+v, %v; attributevalue %+v, %v", want, read, readErr, slow, slowErr)
		}
	})
}

// fuzzRecord spreads the inputs over the record's fields, flags choosing
// which are set, empty or nil.
func fuzzRecord(s, hexish string, b []byte, n1, n2 int64, flags uint16, k, v string) record {
	on := func(bit int) bool { return flags&(1<<bit) != 0 }
	pick := func(bit int, x string) string {
		if on(bit) {
			return x
		}
		return ""
	}
	n := func(bit int, x int64) int64 {
		if on(bit) {
			return x
		}
		return 0
	}
	r := record{
		PK: s, Operation: pick(0, s), Account: pick(1, v), Key: pick(2, k), Source: pick(3, s), Status: pick(4, v),
		Fingerprint: hexBinary(hexish), LeaseToken: pick(5, k), LeaseExpiresAt: n1, Attempt: int(n(6, n2)),
		DownstreamKey: hexBinary(pick(7, hexish)), InTransitBoundMs: n(8, n1), ClockSkewMs: n(9, n2), Downstream: pick(10, v),
		ResponseStatus: int(n(11, n2)), CreatedAt: n2, ExpiresAt: n(12, n1), ExpiryBucket: pick(13, k),
		InflightShard: pick(14, s), StaleAt: n(15, n2), ReconcileAttempts: int(n(6, n1)),
	}
	if on(0) || len(b) > 0 {
		r.Request = b
	}
	if on(1) {
		r.ResponseBody = b
	}
	if on(2) {
		r.ResponseHeaders = map[string]string{}
		if on(3) {
			r.ResponseHeaders[k] = v
		}
	}
	if on(4) {
		r.ResponseResult = map[string]string{v: k}
	}
	if on(5) {
		r.Hold = &hold{Reason: s, Evidence: b, At: n1}
		if on(6) {
			r.Hold.Settling = &settlement{Action: k, By: v, At: n2}
		}
	}
	return r
}

// mutate changes av by pairs of bytes: the first picks an attribute (one
// of the record's, one differing from "status" only in case, or an
// unknown one), the second what it becomes.
func mutate(av map[string]types.AttributeValue, mutations []byte, s string, n int64) {
	names := append(append([]string{}, recordAttributes...), "Status", "not_a_field")
	for i := 0; i+1 < len(mutations); i += 2 {
		name := names[int(mutations[i])%len(names)]
		if name == "Status" { // never both: which wins would be map order's
			delete(av, "status")
		}
		if name == "status" {
			delete(av, "Status")
		}
		values := []types.AttributeValue{
			&types.AttributeValueMemberS{Value: s},
			&types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)},
			&types.AttributeValueMemberN{Value: s},
			&types.AttributeValueMemberN{Value: "99999999999999999999"},
			&types.AttributeValueMemberB{Value: []byte(s)},
			&types.AttributeValueMemberNULL{Value: true},
			&types.AttributeValueMemberBOOL{Value: true},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{s: &types.AttributeValueMemberS{Value: s}}},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"reason": &types.AttributeValueMemberN{Value: "1"}}},
			&types.AttributeValueMemberL{},
			&types.AttributeValueMemberSS{Value: []string{s}},
		}
		av[name] = values[int(mutations[i+1])%len(values)]
	}
}

// BenchmarkRecordItem: a completed record's item written and read by
// hand, against attributevalue's reflection.
func BenchmarkRecordItem(b *testing.B) {
	r := completedRecord()
	av, err := r.item()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("write/by-hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = r.item()
		}
	})
	b.Run("write/attributevalue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = attributevalue.MarshalMap(r)
		}
	})
	b.Run("read/by-hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = readRecord(av)
		}
	})
	b.Run("read/attributevalue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var it record
			_ = attributevalue.UnmarshalMap(av, &it)
		}
	})
}

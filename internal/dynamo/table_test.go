package dynamo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestAttributeNames: the record's layout spells its key, its expiry, the
// in-flight index's keys, what the index projects, and the hold and its
// reason (which the stream filters match) as the table's definition names
// them.
func TestAttributeNames(t *testing.T) {
	names := map[string]string{
		"PK": tabledef.KeyAttribute, "ExpiresAt": tabledef.TTLAttribute,
		"InflightShard": tabledef.InflightShardAttribute, "LeaseExpiresAt": tabledef.LeaseExpiresAttribute,
		"ExpiryBucket": tabledef.ExpiryBucketAttribute, "Hold": tabledef.HoldAttribute,
	}
	projected := map[string]bool{}
	for _, name := range tabledef.Table().Indexes[0].Projected {
		projected[name] = true
	}
	for i := range reflect.TypeFor[record]().NumField() {
		f := reflect.TypeFor[record]().Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ","); projected[name] {
			delete(projected, name)
		}
	}
	if len(projected) > 0 {
		t.Errorf("the in-flight index projects %v, which no field of the record is stored as", projected)
	}
	for field, want := range names {
		f, ok := reflect.TypeFor[record]().FieldByName(field)
		if name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ","); !ok || name != want {
			t.Errorf("record.%s is stored as %q, the table's name is %q", field, name, want)
		}
	}
	// The hold and its reason, which the stream filters match.
	f, ok := reflect.TypeFor[hold]().FieldByName("Reason")
	if name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ","); !ok || name != tabledef.HoldReasonAttribute {
		t.Errorf("hold.Reason is stored as %q, the filters' name is %q", name, tabledef.HoldReasonAttribute)
	}
}

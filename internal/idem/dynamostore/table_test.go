package dynamostore

import (
	"reflect"
	"strings"
	"testing"
)

// TestAttributeNames: the record's layout spells its key and its expiry as
// the table's definition names them.
func TestAttributeNames(t *testing.T) {
	for field, want := range map[string]string{"PK": KeyAttribute, "ExpiresAt": TTLAttribute} {
		f, ok := reflect.TypeFor[record]().FieldByName(field)
		if name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ","); !ok || name != want {
			t.Errorf("record.%s is stored as %q, the table's name is %q", field, name, want)
		}
	}
}

package dynamoledger

import (
	"reflect"
	"testing"

	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestKeyAttribute: a ledger row's key is the table's partition key.
func TestKeyAttribute(t *testing.T) {
	if f, ok := reflect.TypeFor[row]().FieldByName("PK"); !ok || f.Tag.Get("dynamodbav") != tabledef.KeyAttribute {
		t.Fatalf("row.PK is stored as %q, the table's key is %q", f.Tag.Get("dynamodbav"), tabledef.KeyAttribute)
	}
}

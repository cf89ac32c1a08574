package dynamo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestRowAttributeNames: a ledger row's key is the table's partition key, and
// its region and unpublished listing are stored under the names the
// table's unpublished index reads.
func TestRowAttributeNames(t *testing.T) {
	for field, want := range map[string]string{
		"PK": tabledef.KeyAttribute, "Region": tabledef.RegionAttribute,
		"UnpublishedShard": tabledef.UnpublishedShardAttribute, "UnpublishedSince": tabledef.UnpublishedSinceAttribute,
	} {
		f, ok := reflect.TypeFor[row]().FieldByName(field)
		if name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ","); !ok || name != want {
			t.Errorf("row.%s is stored as %q, the table's name is %q", field, name, want)
		}
	}
}

package dynamo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestRowAttributeNames: a ledger row's key is the table's partition key, and
// its region and unpublished listing are stored under the names the
// table's unpublished index reads; a row's and a marker's type, under the
// name the stream filters read.
func TestRowAttributeNames(t *testing.T) {
	for field, want := range map[string]string{
		"PK": tabledef.KeyAttribute, "Region": tabledef.RegionAttribute, "Type": tabledef.TypeAttribute,
		"UnpublishedShard": tabledef.UnpublishedShardAttribute, "UnpublishedSince": tabledef.UnpublishedSinceAttribute,
		"AuthorizationShard": tabledef.AuthorizationShardAttribute, "AuthorizationExpiresAt": tabledef.AuthorizationExpiresAttribute,
		"Amount": tabledef.AmountAttribute, "DayShard": tabledef.DayShardAttribute, "DayAt": tabledef.DayAtAttribute,
		"Status": tabledef.StatusAttribute, "Currency": tabledef.CurrencyAttribute, "ChargeID": tabledef.ChargeIDAttribute,
	} {
		for name, layout := range map[string]reflect.Type{"row": reflect.TypeFor[row](), "refundRow": reflect.TypeFor[refundRow](), "actionRow": reflect.TypeFor[actionRow](), "rowMarker": reflect.TypeFor[rowMarker]()} {
			f, ok := layout.FieldByName(field)
			// Every row has the common fields and the charge row its own;
			// the others are each layout's that has them (a charge row
			// names no charge but itself).
			if !ok && (name != "row" || field == "ChargeID") && field != "PK" && field != "Type" {
				continue
			}
			if tag, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ","); !ok || tag != want {
				t.Errorf("%s.%s is stored as %q, the table's name is %q", name, field, tag, want)
			}
		}
	}
}

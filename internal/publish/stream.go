package publish

import (
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/streamfilter"
)

// Deliverable are the records a stream trigger with filters (a
// streamfilter.Set, as deployed) delivers of records, given in Lambda's
// form (dynamo.StreamRecords): those that match, matched on their JSON as
// Lambda matches them. A record Match cannot judge is delivered, for the
// publisher to judge.
func Deliverable(records []events.DynamoDBEventRecord, filters streamfilter.Set) []events.DynamoDBEventRecord {
	var out []events.DynamoDBEventRecord
	for _, rec := range records {
		b, _ := json.Marshal(rec)
		if ok, err := filters.Match(b); err != nil || ok {
			out = append(out, rec)
		}
	}
	return out
}

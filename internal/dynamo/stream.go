package dynamo

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// The table's stream. Lambda gives a function its records in its own form
// (events.DynamoDBEventRecord); the local stack reads the Streams API, whose
// records StreamRecord turns into that form, so the stream trigger's
// filters (streamfilter) match the same JSON in both places. Change decodes
// that one form into the change it is.

// Change decodes a stream record of the table, in Lambda's form, into the
// change it is: an idempotency record before and after, or the ledger row
// inserted, of whichever operation registers the key's prefix
// (operations.ByRowKey; a row's other changes, a marker's at a row's key,
// and other items, make an empty Change). The key says which, once: the
// images are then decoded as that item, without asking again. A record
// without a string key, or an image that does not decode, is an error.
func Change(r events.DynamoDBEventRecord) (outbox.Change, error) {
	var c outbox.Change
	pk := r.Change.Keys[tabledef.KeyAttribute]
	if pk.DataType() != events.DataTypeString {
		return c, errors.New("stream record: no pk")
	}
	key := pk.String()
	if strings.HasPrefix(key, idem.RecordPrefix) {
		var err error
		if c.OldRecord, err = recordOf(r.Change.OldImage); err != nil {
			return c, err
		}
		c.NewRecord, err = recordOf(r.Change.NewImage)
		return c, err
	}
	reg, ok := operations.ByRowKey(key)
	expired := expiredBy(r)
	if !ok || isMarker(imageType(r.Change.NewImage)) || r.EventName != string(events.DynamoDBOperationTypeInsert) && !expired {
		return c, nil // not a row; a marker put; or a row's later change: only an expiry's mark makes an event
	}
	l, err := layoutOf(reg)
	if err != nil {
		return c, err
	}
	row, err := l.decode(strings.TrimPrefix(key, reg.RowKeyPrefix), item(r.Change.NewImage))
	switch ch, isCharge := row.(operations.ChargeRow); {
	case err != nil:
		return c, err
	case !expired:
		c.Inserted = row
	case !isCharge:
		return c, fmt.Errorf("stream record: an expiry's mark on a row that is no charge's")
	default:
		c.Expired = operations.ExpiredRow(ch)
	}
	return c, nil
}

// expiredBy reports whether r is the change that marked a row expired
// (tabledef.ExpiredAttribute appears): the sweeper's unlist of an
// authorization it found closed at its expiry.
func expiredBy(r events.DynamoDBEventRecord) bool {
	_, before := r.Change.OldImage[tabledef.ExpiredAttribute]
	_, after := r.Change.NewImage[tabledef.ExpiredAttribute]
	return r.EventName == string(events.DynamoDBOperationTypeModify) && after && !before
}

// isMarker reports whether the item type t is a marker's: a held or a
// voided marker at a row's key (markers.go), which makes no change.
func isMarker(t string) bool {
	return t == tabledef.HeldMarkerType || t == tabledef.VoidedMarkerType
}

// imageType is an image's type attribute, "" when it has none.
func imageType(image map[string]events.DynamoDBAttributeValue) string {
	t, ok := image[tabledef.TypeAttribute]
	if !ok || t.DataType() != events.DataTypeString {
		return ""
	}
	return t.String()
}

// recordOf is a record's image, or nil for none.
func recordOf(image map[string]events.DynamoDBAttributeValue) (*idem.Record, error) {
	if len(image) == 0 {
		return nil, nil
	}
	return fromItem(item(image))
}

// item is an image in the SDK's types, which the table's layouts decode.
func item(image map[string]events.DynamoDBAttributeValue) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(image))
	for k, v := range image {
		out[k] = attribute(v)
	}
	return out
}

func attribute(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}
	case events.DataTypeList:
		var l []types.AttributeValue
		for _, e := range v.List() {
			l = append(l, attribute(e))
		}
		return &types.AttributeValueMemberL{Value: l}
	case events.DataTypeMap:
		return &types.AttributeValueMemberM{Value: item(v.Map())}
	}
	panic(fmt.Sprintf("attribute of data type %v", v.DataType()))
}

// StreamRecords are records, read from the stream streamARN, as Lambda
// gives them to a function (StreamRecord).
func StreamRecords(records []streamtypes.Record, streamARN string) []events.DynamoDBEventRecord {
	out := make([]events.DynamoDBEventRecord, len(records))
	for i, r := range records {
		out[i] = StreamRecord(r, streamARN)
	}
	return out
}

// StreamRecord is r as Lambda gives a stream record to a function.
func StreamRecord(r streamtypes.Record, streamARN string) events.DynamoDBEventRecord {
	c := r.Dynamodb
	rec := events.DynamoDBEventRecord{
		AWSRegion: regionOf(streamARN), EventID: aws.ToString(r.EventID), EventName: string(r.EventName), EventSource: "aws:dynamodb",
		EventVersion: aws.ToString(r.EventVersion), EventSourceArn: streamARN,
		Change: events.DynamoDBStreamRecord{
			Keys: image(c.Keys), NewImage: image(c.NewImage), OldImage: image(c.OldImage),
			SequenceNumber: aws.ToString(c.SequenceNumber), SizeBytes: aws.ToInt64(c.SizeBytes), StreamViewType: string(c.StreamViewType),
		},
	}
	if c.ApproximateCreationDateTime != nil {
		rec.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *c.ApproximateCreationDateTime}
	}
	return rec
}

func image(item map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		out[k] = streamAttribute(v)
	}
	return out
}

func streamAttribute(v streamtypes.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberL:
		var l []events.DynamoDBAttributeValue
		for _, e := range v.Value {
			l = append(l, streamAttribute(e))
		}
		return events.NewListAttribute(l)
	case *streamtypes.AttributeValueMemberM:
		return events.NewMapAttribute(image(v.Value))
	}
	panic(fmt.Sprintf("stream attribute %T", v))
}

// regionOf is the region of an ARN (arn:partition:service:region:...).
func regionOf(arn string) string {
	parts := strings.SplitN(arn, ":", 5)
	if len(parts) < 5 {
		return ""
	}
	return parts[3]
}

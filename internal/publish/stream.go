package publish

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/idempotent-payments/idempay/internal/streamfilter"
)

// Deliverable is what a stream trigger with filters delivers of records,
// read from the stream streamARN: each as Lambda gives it to a function
// (StreamRecord), and only those that match filters (a
// streamfilter.Set). A record Match cannot judge is delivered, for the
// publisher to judge.
func Deliverable(records []streamtypes.Record, streamARN string, filters streamfilter.Set) []events.DynamoDBEventRecord {
	var out []events.DynamoDBEventRecord
	for _, r := range records {
		rec := StreamRecord(r, streamARN)
		b, _ := json.Marshal(rec)
		if ok, err := filters.Match(b); err != nil || ok {
			out = append(out, rec)
		}
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

package dynamo

import (
	"fmt"
	"strings"
	"testing"
)

// failureRecord is an invocation record as Lambda writes it for a stream
// batch it gave up on.
func failureRecord(arn, shard, start, end string) string {
	return fmt.Sprintf(`{"requestContext":{"requestId":"316aa6d0-8154-xmpl-9af7-85d5f4a6bc81","functionArn":"arn:aws:lambda:us-east-2:123456789012:function:publisher",`+
		`"condition":"RecordAgeExceeded","approximateInvokeCount":1},"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},`+
		`"version":"1.0","timestamp":"2026-11-14T00:13:49.717Z","DDBStreamBatchInfo":{"shardId":%q,"startSequenceNumber":%q,"endSequenceNumber":%q,`+
		`"approximateArrivalOfFirstRecord":"2026-11-13T00:13:19Z","approximateArrivalOfLastRecord":"2026-11-13T00:13:19Z","batchSize":1,"streamArn":%q}}`,
		shard, start, end, arn)
}

const (
	exampleARN   = "arn:aws:dynamodb:us-east-2:123456789012:table/idempay-prod-Table/stream/2026-11-14T00:04:06.388"
	exampleShard = "shardId-00000001573689847184-864758bb"
	exampleSeq   = "800000000003126276362"
)

func TestParseFailure(t *testing.T) {
	f, err := ParseFailure([]byte(failureRecord(exampleARN, exampleShard, "800000000003126276362", "800000000003126276400")))
	if err != nil || f != (Failure{StreamARN: exampleARN, ShardID: exampleShard, Start: "800000000003126276362", End: "800000000003126276400",
		FirstArrival: "2026-11-13T00:13:19Z", LastArrival: "2026-11-13T00:13:19Z"}) {
		t.Fatalf("%+v, %v", f, err)
	}
	for name, body := range map[string]string{
		"not JSON":             "{",
		"no batch":             `{"version":"1.0"}`,
		"a Kinesis batch":      `{"KinesisBatchInfo":{"shardId":"shardId-000000000001"}}`,
		"start after end":      failureRecord(exampleARN, exampleShard, "900000000003126276362", "800000000003126276362"),
		"start after end (2)":  failureRecord(exampleARN, exampleShard, "1000000000003126276362", "999999999993126276362"),
		"leading zeros, after": failureRecord(exampleARN, exampleShard, "0900000000003126276362", "800000000003126276362"),
		"too long":             failureRecord(exampleARN, exampleShard, exampleSeq, strings.Repeat("9", 41)),
		"too short":            failureRecord(exampleARN, exampleShard, "80000000000312627636", "900000000003126276362"),
		"not a number":         failureRecord(exampleARN, exampleShard, "80000000000312627636a", "900000000003126276362"),
		"another service":      failureRecord("arn:aws:kinesis:us-east-2:123456789012:stream/x", exampleShard, exampleSeq, exampleSeq),
		"a shard with a /":     failureRecord(exampleARN, "shardId-0000000157368984/184-864758bb", exampleSeq, exampleSeq),
		"duplicate member": strings.Replace(failureRecord(exampleARN, exampleShard, exampleSeq, exampleSeq), `"batchSize":1`,
			`"batchSize":1,"startSequenceNumber":"100000000000000000000"`, 1),
		"case variant": strings.Replace(failureRecord(exampleARN, exampleShard, exampleSeq, exampleSeq), `"streamArn"`, `"streamARN"`, 1),
	} {
		if f, err := ParseFailure([]byte(body)); err == nil {
			t.Errorf("%s: accepted as %+v", name, f)
		}
	}
}

// FuzzParseFailure: never a panic; an accepted record has a range whose
// start is not after its end.
func FuzzParseFailure(f *testing.F) {
	f.Add(failureRecord(exampleARN, exampleShard, "800000000003126276362", "800000000003126276400"))
	f.Add(`{"DDBStreamBatchInfo":{}}`)
	f.Add(`{"DDBStreamBatchInfo":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		got, err := ParseFailure([]byte(body))
		if err == nil && compareSequence(got.Start, got.End) > 0 {
			t.Fatalf("%q: accepted %+v", body, got)
		}
	})
}

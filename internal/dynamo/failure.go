package dynamo

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// Failure is what the stream trigger's on-failure destination receives
// for a batch it gave up on (its records aged out of the stream while the
// publisher failed): the batch's place in the stream, not its records.
type Failure struct {
	StreamARN, ShardID string
	// Start and End are the first and the last record's sequence numbers.
	Start, End string
	// FirstArrival and LastArrival are the records' approximate times, as
	// Lambda wrote them: where to look in the ledger once the stream no
	// longer holds them.
	FirstArrival, LastArrival string
}

// invocationRecord is the part of Lambda's invocation record of a failed
// stream batch that says which batch.
type invocationRecord struct {
	Batch *struct {
		ShardID      string `json:"shardId"`
		Start        string `json:"startSequenceNumber"`
		End          string `json:"endSequenceNumber"`
		FirstArrival string `json:"approximateArrivalOfFirstRecord"`
		LastArrival  string `json:"approximateArrivalOfLastRecord"`
		StreamARN    string `json:"streamArn"`
	} `json:"DDBStreamBatchInfo"`
}

var (
	// sequenceNumber is DynamoDB Streams' sequence number: 21 to 40
	// digits (DynamoDB Local's begin with zeros).
	sequenceNumber = regexp.MustCompile(`^[0-9]{21,40}$`)
	shardID        = regexp.MustCompile(`^[a-zA-Z0-9_.-]{28,65}$`)
	streamARN      = regexp.MustCompile(`^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/[a-zA-Z0-9_.-]{3,255}/stream/[0-9T:.-]{1,40}$`)
)

// ParseFailure reads one message of the on-failure destination: a JSON
// object whose DDBStreamBatchInfo names a stream by its ARN, a shard and a
// range of sequence numbers, the start not after the end. It is parsed as
// an answer of a system we call (strictjson.UnmarshalResponse: members Lambda
// may add are ignored, a duplicate or a case variant is refused); anything
// else is an error, and nothing is read from the stream for it.
func ParseFailure(body []byte) (Failure, error) {
	var rec invocationRecord
	if err := strictjson.UnmarshalResponse(body, &rec); err != nil {
		return Failure{}, fmt.Errorf("not an invocation record: %w", err)
	}
	b := rec.Batch
	switch {
	case b == nil:
		return Failure{}, errors.New("the invocation record has no DDBStreamBatchInfo: not a stream batch's")
	case !streamARN.MatchString(b.StreamARN):
		return Failure{}, fmt.Errorf("streamArn %q is not a DynamoDB stream's ARN", b.StreamARN)
	case !shardID.MatchString(b.ShardID):
		return Failure{}, fmt.Errorf("shardId %q is not a shard id", b.ShardID)
	case !sequenceNumber.MatchString(b.Start) || !sequenceNumber.MatchString(b.End):
		return Failure{}, fmt.Errorf("sequence numbers %q to %q: want decimal numbers", b.Start, b.End)
	case compareSequence(b.Start, b.End) > 0:
		return Failure{}, fmt.Errorf("sequence numbers %s to %s: the start is after the end", b.Start, b.End)
	}
	return Failure{StreamARN: b.StreamARN, ShardID: b.ShardID, Start: b.Start, End: b.End, FirstArrival: b.FirstArrival, LastArrival: b.LastArrival}, nil
}

// compareSequence orders two sequence numbers (decimal numbers, leading
// zeros allowed): -1, 0 or 1.
func compareSequence(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	switch {
	case len(a) != len(b):
		if len(a) < len(b) {
			return -1
		}
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ErrAgedOut: the stream no longer holds the failure's records (it keeps
// them 24 hours). Their charges are republished from the ledger instead.
var ErrAgedOut = errors.New("the stream no longer holds these records")

// Streams is what Range needs of DynamoDB Streams.
type Streams interface {
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// maxEmptyPages bounds the empty pages Range reads before the failure's
// end: the stream may answer empty pages before records it holds, never
// this many.
const maxEmptyPages = 100

// Range reads the failure's records from the stream, from its start to its
// end, and returns them as Lambda gives them to a function (StreamRecord),
// every one: the trigger's filters are the publisher's to apply
// (publish.Deliverable). ErrAgedOut when the stream has trimmed the start.
func Range(ctx context.Context, streams Streams, f Failure) ([]events.DynamoDBEventRecord, error) {
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(f.StreamARN), ShardId: aws.String(f.ShardID),
		ShardIteratorType: streamtypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(f.Start),
	})
	var trimmed *streamtypes.TrimmedDataAccessException
	var gone *streamtypes.ResourceNotFoundException
	if errors.As(err, &trimmed) || errors.As(err, &gone) {
		return nil, fmt.Errorf("shard %s from %s: %w (%v)", f.ShardID, f.Start, ErrAgedOut, err)
	}
	if err != nil {
		return nil, err
	}
	var records []streamtypes.Record
	iterator, empty := it.ShardIterator, 0
	for iterator != nil {
		out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iterator})
		if errors.As(err, &trimmed) {
			return nil, fmt.Errorf("shard %s: %w (%v)", f.ShardID, ErrAgedOut, err)
		}
		if err != nil {
			return nil, err
		}
		for _, r := range out.Records {
			if compareSequence(aws.ToString(r.Dynamodb.SequenceNumber), f.End) > 0 {
				return StreamRecords(records, f.StreamARN), nil
			}
			records = append(records, r)
		}
		if n := len(records); n > 0 && compareSequence(aws.ToString(records[n-1].Dynamodb.SequenceNumber), f.End) == 0 {
			break
		}
		if len(out.Records) == 0 {
			if empty++; empty > maxEmptyPages {
				return nil, fmt.Errorf("shard %s: %d empty pages without reaching %s", f.ShardID, maxEmptyPages, f.End)
			}
		}
		iterator = out.NextShardIterator
	}
	if len(records) == 0 || compareSequence(aws.ToString(records[0].Dynamodb.SequenceNumber), f.Start) != 0 {
		return nil, fmt.Errorf("shard %s: the record %s is not there: %w", f.ShardID, f.Start, ErrAgedOut)
	}
	return StreamRecords(records, f.StreamARN), nil
}

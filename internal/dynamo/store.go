package dynamo

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

const tableWait = 2 * time.Minute

// Store is the idem.Store on the table (Table.Store).
type Store struct {
	api   API
	table string
}

// record is the item layout. Times are epoch numbers: lease_expires_at in
// milliseconds (the in-flight index sorts on it), expires_at in seconds (TTL
// requires it).
type record struct {
	PK                string            `dynamodbav:"pk"`
	Operation         string            `dynamodbav:"operation"`
	Account           string            `dynamodbav:"account"`
	Key               string            `dynamodbav:"idempotency_key"`
	Source            string            `dynamodbav:"source,omitempty"`
	Status            string            `dynamodbav:"status"`
	Fingerprint       hexBinary         `dynamodbav:"fingerprint"`
	Request           []byte            `dynamodbav:"request"`
	LeaseToken        string            `dynamodbav:"lease_token"`
	LeaseExpiresAt    int64             `dynamodbav:"lease_expires_at"`
	Attempt           int               `dynamodbav:"attempt"`
	DownstreamKey     hexBinary         `dynamodbav:"downstream_key"`
	InTransitBoundMs  int64             `dynamodbav:"in_transit_bound,omitempty"` // Protocol, in milliseconds; absent in older records
	ClockSkewMs       int64             `dynamodbav:"clock_skew,omitempty"`
	Downstream        string            `dynamodbav:"downstream,omitempty"`
	Hold              *hold             `dynamodbav:"hold,omitempty"`
	ResponseStatus    int               `dynamodbav:"response_status,omitempty"`
	ResponseHeaders   map[string]string `dynamodbav:"response_headers,omitempty"`
	ResponseBody      []byte            `dynamodbav:"response_body,omitempty"`
	ResponseResult    map[string]string `dynamodbav:"response_result,omitempty"`
	CreatedAt         int64             `dynamodbav:"created_at"`
	ExpiresAt         int64             `dynamodbav:"expires_at,omitempty"`     // absent while held: TTL never deletes it
	ExpiryBucket      string            `dynamodbav:"expiry_bucket,omitempty"`  // with expires_at: the expiry index's partition (idem.ExpiryBucket)
	InflightShard     string            `dynamodbav:"inflight_shard,omitempty"` // set while in progress: the in-flight index's partition
	StaleAt           int64             `dynamodbav:"stale_at,omitempty"`
	ReconcileAttempts int               `dynamodbav:"reconcile_attempts,omitempty"`
}

// hold is idem.Hold as a map attribute; times in epoch milliseconds.
type hold struct {
	Reason     string      `dynamodbav:"reason"`
	Evidence   []byte      `dynamodbav:"evidence,omitempty"`
	At         int64       `dynamodbav:"at"`
	Settling   *settlement `dynamodbav:"settling,omitempty"`
	Settlement *settlement `dynamodbav:"settlement,omitempty"`
}

type settlement struct {
	Action   string `dynamodbav:"action"`
	By       string `dynamodbav:"by"`
	Decision string `dynamodbav:"decision,omitempty"` // absent in settlements made before decisions had ids
	At       int64  `dynamodbav:"at"`
}

func toHold(h idem.Hold) *hold {
	out := &hold{Reason: h.Reason, Evidence: h.Evidence, At: h.At.UnixMilli()}
	if h.Settling != nil {
		out.Settling = toSettlement(*h.Settling)
	}
	if h.Settlement != nil {
		out.Settlement = toSettlement(*h.Settlement)
	}
	return out
}

func toSettlement(s idem.Settlement) *settlement {
	return &settlement{Action: s.Action, By: s.By, Decision: s.Decision, At: s.At.UnixMilli()}
}

func (s *settlement) idem() *idem.Settlement {
	if s == nil {
		return nil
	}
	return &idem.Settlement{Action: s.Action, By: s.By, Decision: s.Decision, At: time.UnixMilli(s.At)}
}

func (h *hold) idem() *idem.Hold {
	return &idem.Hold{Reason: h.Reason, Evidence: h.Evidence, At: time.UnixMilli(h.At), Settling: h.Settling.idem(), Settlement: h.Settlement.idem()}
}

// marker is idem.ReleaseMarker as an item, under tabledef.ReleasePrefix
// and the downstream key; at in epoch milliseconds.
type marker struct {
	PK       string `dynamodbav:"pk"`
	Record   string `dynamodbav:"record"`
	Attempt  int    `dynamodbav:"attempt"`
	Action   string `dynamodbav:"action"`
	By       string `dynamodbav:"by"`
	Decision string `dynamodbav:"decision"`
	At       int64  `dynamodbav:"at"`
}

// heldShard is the in-flight index's partition of the held records, apart
// from the shards the sweepers list (idem.InFlightQuery.Held). Holds are
// rare, so one partition takes their writes.
const heldShard = "held"

func toItem(r idem.Record) record {
	out := record{
		PK: r.PK, Operation: r.Operation, Account: r.Account, Key: r.Key, Source: r.Source,
		Status: string(r.Status), Fingerprint: hexBinary(r.Fingerprint), Request: r.Request,
		LeaseToken: r.LeaseToken, LeaseExpiresAt: r.LeaseExpiresAt.UnixMilli(),
		Attempt: r.Attempt, DownstreamKey: hexBinary(r.DownstreamKey),
		InTransitBoundMs: r.Protocol.InTransitBound.Milliseconds(), ClockSkewMs: r.Protocol.ClockSkew.Milliseconds(),
		Downstream:        r.Protocol.Downstream,
		CreatedAt:         r.CreatedAt.UnixMilli(),
		ReconcileAttempts: r.ReconcileAttempts,
	}
	if !r.ExpiresAt.IsZero() {
		out.ExpiresAt, out.ExpiryBucket = r.ExpiresAt.Unix(), idem.ExpiryBucket(r.PK, r.ExpiresAt)
	}
	if r.Hold != nil {
		out.Hold = toHold(*r.Hold)
	}
	switch {
	case r.Held():
		out.InflightShard = heldShard
	case r.Status == idem.StatusInProgress:
		out.InflightShard = shardKey(idem.ShardOf(r.PK))
	}
	if !r.StaleAt.IsZero() {
		out.StaleAt = r.StaleAt.UnixMilli()
	}
	if r.Response != nil {
		out.ResponseStatus = r.Response.StatusCode
		out.ResponseHeaders = r.Response.Headers
		out.ResponseBody = r.Response.Body
		out.ResponseResult = r.Response.Result
	}
	return out
}

func fromItem(av map[string]types.AttributeValue) (*idem.Record, error) {
	it, err := readRecord(av)
	if err != nil {
		return nil, fmt.Errorf("decode record: %w", err)
	}
	r := &idem.Record{
		PK: it.PK, Operation: it.Operation, Account: it.Account, Key: it.Key, Source: it.Source,
		Status: idem.Status(it.Status), Fingerprint: string(it.Fingerprint), Request: it.Request,
		LeaseToken: it.LeaseToken, LeaseExpiresAt: time.UnixMilli(it.LeaseExpiresAt),
		Attempt: it.Attempt, DownstreamKey: string(it.DownstreamKey),
		Protocol: idem.Protocol{
			InTransitBound: time.Duration(it.InTransitBoundMs) * time.Millisecond,
			ClockSkew:      time.Duration(it.ClockSkewMs) * time.Millisecond, Downstream: it.Downstream,
		},
		CreatedAt:         time.UnixMilli(it.CreatedAt),
		ReconcileAttempts: it.ReconcileAttempts,
	}
	if it.ExpiresAt != 0 {
		r.ExpiresAt = time.Unix(it.ExpiresAt, 0)
	}
	if it.Hold != nil {
		r.Hold = it.Hold.idem()
	}
	if it.StaleAt != 0 {
		r.StaleAt = time.UnixMilli(it.StaleAt)
	}
	if r.Status == idem.StatusCompleted {
		r.Response = &idem.Response{StatusCode: it.ResponseStatus, Headers: it.ResponseHeaders, Body: it.ResponseBody, Result: it.ResponseResult}
	}
	return r, nil
}

// hexBinary is a hex digest or key (fingerprint, downstream key) that the
// table keeps as its bytes, half the size. It reads back the strings
// records written before that carry, and keeps as a string anything that
// is not hex.
type hexBinary string

// MarshalDynamoDBAttributeValue implements attributevalue.Marshaler.
func (h hexBinary) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	if lowerHex(string(h)) {
		if b, err := hex.DecodeString(string(h)); err == nil {
			return &types.AttributeValueMemberB{Value: b}, nil
		}
	}
	return &types.AttributeValueMemberS{Value: string(h)}, nil
}

// lowerHex: a non-empty even run of 0-9a-f, which reads back as itself.
func lowerHex(s string) bool {
	if s == "" || len(s)%2 != 0 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// UnmarshalDynamoDBAttributeValue implements attributevalue.Unmarshaler.
func (h *hexBinary) UnmarshalDynamoDBAttributeValue(av types.AttributeValue) error {
	switch v := av.(type) {
	case *types.AttributeValueMemberB:
		*h = hexBinary(hex.EncodeToString(v.Value))
	case *types.AttributeValueMemberS:
		*h = hexBinary(v.Value)
	default:
		return fmt.Errorf("%T, want bytes or a string", av)
	}
	return nil
}

func pkKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tabledef.KeyAttribute: &types.AttributeValueMemberS{Value: pk}}
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// held is the fence of every write after the claim.
const held = "lease_token = :token AND #status = :inprogress"

func heldValues(token string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":token":      str(token),
		":inprogress": str(string(idem.StatusInProgress)),
	}
}

var statusName = map[string]string{"#status": "status"}

// Claim implements idem.Store with one conditional PutItem. On a lost
// condition the existing record comes back in the same call
// (ReturnValuesOnConditionCheckFailure ALL_OLD): no follow-up read.
func (s *Store) Claim(ctx context.Context, rec idem.Record, now time.Time) (*idem.Record, bool, error) {
	av, err := toItem(rec).item()
	if err != nil {
		return nil, false, fmt.Errorf("encode record: %w", err)
	}
	_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                av,
		ConditionExpression:                 aws.String("attribute_not_exists(" + tabledef.KeyAttribute + ") OR " + tabledef.TTLAttribute + " < :now"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(now.Unix())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		existing, err := fromItem(failed.Item)
		if err != nil {
			return nil, false, err
		}
		return existing, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("put: %w", writeError(err))
	}
	return nil, true, nil
}

// Get implements idem.Store with a strongly consistent GetItem.
func (s *Store) Get(ctx context.Context, pk string, now time.Time) (*idem.Record, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            pkKey(pk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	if out.Item == nil {
		return nil, idem.ErrNotFound
	}
	rec, err := fromItem(out.Item)
	if err != nil {
		return nil, err
	}
	if !rec.Live(now) {
		return nil, idem.ErrNotFound
	}
	return rec, nil
}

// TakeOver implements idem.Store with one UpdateItem fenced on the old token,
// the in-progress status, an expired lease, no hold and retention.
func (s *Store) TakeOver(ctx context.Context, h idem.Handover) (*idem.Record, error) {
	return s.takeOver(ctx, h, false)
}

// TakeOverHeld implements idem.Store as TakeOver does, on a held record.
func (s *Store) TakeOverHeld(ctx context.Context, h idem.Handover) (*idem.Record, error) {
	return s.takeOver(ctx, h, true)
}

func (s *Store) takeOver(ctx context.Context, h idem.Handover, onHold bool) (*idem.Record, error) {
	values := heldValues(h.OldToken)
	cond := held + " AND lease_expires_at < :nowms AND attribute_exists(#hold)"
	if !onHold {
		cond = held + " AND lease_expires_at < :nowms AND attribute_not_exists(#hold) AND " + tabledef.TTLAttribute + " >= :now"
		values[":now"] = num(h.Now.Unix())
	}
	values[":new"] = str(h.NewToken)
	values[":lease"] = num(h.LeaseExpiresAt.UnixMilli())
	values[":nowms"] = num(h.Now.UnixMilli())
	values[":one"] = num(1)
	values[":t"] = num(h.Protocol.InTransitBound.Milliseconds())
	values[":skew"] = num(h.Protocol.ClockSkew.Milliseconds())
	set := "SET lease_token = :new, lease_expires_at = :lease, attempt = attempt + :one, in_transit_bound = :t, clock_skew = :skew"
	if onHold && h.Settling != nil {
		av, err := attributevalue.Marshal(toSettlement(*h.Settling))
		if err != nil {
			return nil, fmt.Errorf("encode settling: %w", err)
		}
		values[":settling"] = av
		set += ", #hold.settling = :settling"
	}
	if h.Protocol.Downstream != "" {
		values[":downstream"] = str(h.Protocol.Downstream)
		set += ", downstream = :downstream"
	}
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       pkKey(h.PK),
		UpdateExpression:          aws.String(set),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#status": "status", "#hold": tabledef.HoldAttribute},
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err := fenceError(err); err != nil {
		return nil, err
	}
	return fromItem(out.Attributes)
}

// SetLease implements idem.Store.
func (s *Store) SetLease(ctx context.Context, pk, token string, leaseExpiresAt time.Time) error {
	values := heldValues(token)
	values[":lease"] = num(leaseExpiresAt.UnixMilli())
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       pkKey(pk),
		UpdateExpression:          aws.String("SET lease_expires_at = :lease"),
		ConditionExpression:       aws.String(held),
		ExpressionAttributeNames:  statusName,
		ExpressionAttributeValues: values,
	})
	return fenceError(err)
}

// Hold implements idem.Store with one UpdateItem fenced on the lease: it
// sets the hold and the held token, ends the lease, removes expires_at (so
// neither TTL nor a claim's condition can take the record) and moves its
// index entry to the held partition.
func (s *Store) Hold(ctx context.Context, pk, token, heldToken string, h idem.Hold, leaseExpiresAt time.Time) error {
	av, err := attributevalue.Marshal(toHold(h))
	if err != nil {
		return fmt.Errorf("encode hold: %w", err)
	}
	values := heldValues(token)
	values[":hold"] = av
	values[":lease"] = num(leaseExpiresAt.UnixMilli())
	values[":held"] = str(heldShard)
	values[":heldtoken"] = str(heldToken)
	_, err = s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       pkKey(pk),
		UpdateExpression:          aws.String("SET #hold = :hold, lease_token = :heldtoken, lease_expires_at = :lease, inflight_shard = :held REMOVE " + tabledef.TTLAttribute + ", " + tabledef.ExpiryBucketAttribute),
		ConditionExpression:       aws.String(held + " AND attribute_not_exists(#hold)"),
		ExpressionAttributeNames:  map[string]string{"#status": "status", "#hold": tabledef.HoldAttribute},
		ExpressionAttributeValues: values,
	})
	return fenceError(err)
}

// Complete implements idem.Store with one UpdateItem fenced on the lease:
// it stores the response (its typed result as response_result), leaves
// the in-flight index (REMOVE
// inflight_shard) and drops the canonical request; with settled, it also
// stores the settlement on the hold and the new expires_at.
func (s *Store) Complete(ctx context.Context, pk, token string, resp idem.Response, settled *idem.Settlement, expiresAt time.Time) error {
	values := heldValues(token)
	values[":completed"] = str(string(idem.StatusCompleted))
	values[":code"] = num(int64(resp.StatusCode))
	names := map[string]string{"#status": "status", "#request": "request", "#hold": tabledef.HoldAttribute}
	set := "SET #status = :completed, response_status = :code, response_body = :body"
	cond := held + " AND attribute_not_exists(#hold)"
	if settled != nil {
		cond = held + " AND attribute_exists(#hold)"
		av, err := attributevalue.Marshal(toSettlement(*settled))
		if err != nil {
			return fmt.Errorf("encode settlement: %w", err)
		}
		values[":settlement"], values[":expires"], values[":bucket"] = av, num(expiresAt.Unix()), str(idem.ExpiryBucket(pk, expiresAt))
		set += ", #hold.settlement = :settlement, " + tabledef.TTLAttribute + " = :expires, " + tabledef.ExpiryBucketAttribute + " = :bucket"
	}
	if len(resp.Headers) > 0 { // answers that rebuild their headers store none
		headers, err := attributevalue.Marshal(resp.Headers)
		if err != nil {
			return fmt.Errorf("encode headers: %w", err)
		}
		values[":headers"] = headers
		set += ", response_headers = :headers"
	}
	if len(resp.Result) > 0 { // answers stored before results store none
		result, err := attributevalue.Marshal(resp.Result)
		if err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
		values[":result"] = result
		set += ", response_result = :result"
	}
	body := resp.Body
	if body == nil {
		body = []byte{} // DynamoDB rejects a null binary value
	}
	values[":body"] = &types.AttributeValueMemberB{Value: body}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       pkKey(pk),
		UpdateExpression:          aws.String(set + " REMOVE inflight_shard, #request"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return fenceError(err)
}

// Release implements idem.Store with a fenced DeleteItem.
func (s *Store) Release(ctx context.Context, pk, token string) error {
	_, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       pkKey(pk),
		ConditionExpression:       aws.String(held),
		ExpressionAttributeNames:  statusName,
		ExpressionAttributeValues: heldValues(token),
	})
	return fenceError(err)
}

// MarkRelease implements idem.Store with one conditional PutItem: absent,
// or of an attempt no higher than m's.
func (s *Store) MarkRelease(ctx context.Context, m idem.ReleaseMarker) error {
	item, err := attributevalue.MarshalMap(marker{
		PK: tabledef.ReleasePrefix + m.DownstreamKey, Record: m.PK, Attempt: m.Attempt,
		Action: m.Decision.Action, By: m.Decision.By, Decision: m.Decision.Decision, At: m.Decision.At.UnixMilli(),
	})
	if err != nil {
		return fmt.Errorf("encode release marker: %w", err)
	}
	_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR attempt <= :attempt"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":attempt": num(int64(m.Attempt))},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return idem.ErrOtherDecision
	}
	if err != nil {
		return fmt.Errorf("mark release: %w", writeError(err))
	}
	return nil
}

// ReleaseMarker implements idem.Store with one strongly consistent
// GetItem.
func (s *Store) ReleaseMarker(ctx context.Context, downstreamKey string) (*idem.ReleaseMarker, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: pkKey(tabledef.ReleasePrefix + downstreamKey), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get release marker: %w", err)
	}
	if out.Item == nil {
		return nil, idem.ErrNotFound
	}
	var m marker
	if err := attributevalue.UnmarshalMap(out.Item, &m); err != nil {
		return nil, fmt.Errorf("decode release marker: %w", err)
	}
	return &idem.ReleaseMarker{
		DownstreamKey: downstreamKey, PK: m.Record, Attempt: m.Attempt,
		Decision: idem.Settlement{Action: m.Action, By: m.By, Decision: m.Decision, At: time.UnixMilli(m.At)},
	}, nil
}

// fenceError turns a failed fence into idem.ErrLeaseLost, and a conflict
// with another region's write into idem.ErrWriteConflict (writeError).
func fenceError(err error) error {
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return idem.ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("write: %w", writeError(err))
	}
	return nil
}

// writeError is err, joined with idem.ErrWriteConflict when it is a global
// table's ReplicatedWriteConflictException: the write raced another
// region's and had no effect. The SDK's standard retryer does not retry it,
// so the engine does (idem.RetryConflicts), and so does the match
// (retryWrite). Every writer of the table (the store, the ledger, the
// match's books) returns its errors through it.
func writeError(err error) error {
	if IsWriteConflict(err) {
		return errors.Join(idem.ErrWriteConflict, err)
	}
	return err
}

// IsWriteConflict reports whether err is DynamoDB's
// ReplicatedWriteConflictException.
func IsWriteConflict(err error) bool {
	var conflict *types.ReplicatedWriteConflictException
	return errors.As(err, &conflict)
}

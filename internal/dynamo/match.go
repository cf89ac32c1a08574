package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/match"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/strictjson"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// MatchBooks are the match.Books on the table (Table.MatchBooks): the
// day index for a day's rows, the rows and balances for one row or
// charge, and the items of the kept results under tabledef.MatchPrefix:
// one per day (its claim, and once done its counts) and one per line,
// listed in the day index's partition of the day's lines
// (tabledef.MatchLinesShard). Each of its writes that conflicts with
// another region's is tried again (retryWrite) before it fails the run.
type MatchBooks struct{ t *Table }

// MatchBooks are the table's books for the daily match.
func (t *Table) MatchBooks() *MatchBooks { return &MatchBooks{t: t} }

// The attributes of a day's item and a line's.
const (
	matchOwner = "owner"
	matchUntil = "lease_until" // epoch milliseconds
	matchDone  = "done_at"     // epoch milliseconds
	matchCount = "counts"      // a map, by kind
	matchLine  = "line"        // the line, as JSON
	matchSince = "since"       // the first day matched, epoch milliseconds
)

// DayShard is the day index's partition of row id written at at: its UTC
// day and the row's shard (shardOf).
func DayShard(at time.Time, id string) string { return dayPrefix(at) + shardOf(id) }

// dayPrefix begins the day index's partitions of the day of at.
func dayPrefix(at time.Time) string { return at.UTC().Format(time.DateOnly) + "#" }

// linesShard is the day index's partition of day's kept lines.
func linesShard(day time.Time) string { return dayPrefix(day) + tabledef.MatchLinesShard }

// dayKey is the key of day's item, lineKey a line's.
func dayKey(day time.Time) string { return tabledef.MatchPrefix + day.UTC().Format(time.DateOnly) }
func lineKey(day time.Time, l match.Line) string {
	return dayKey(day) + "#" + match.LineKey(l)
}

// DayRows implements match.Books: the day index's partitions of day,
// shard by shard (listPartitions), each row written before before.
func (b *MatchBooks) DayRows(ctx context.Context, day, before time.Time) iter.Seq2[match.Row, error] {
	cond := tabledef.DayShardAttribute + " = :shard AND " + tabledef.DayAtAttribute + " < :before"
	return listPartitions(ctx, b.t.api, b.t.name, tabledef.DayIndex, "the day's rows", cond, dayPrefix(day), before.UnixMilli(), 0, matchRowOf)
}

// matchRowOf reads a row's entry of the day index, or the row's item: one
// written before the index existed has no day_at, and its time is zero.
func matchRowOf(item map[string]types.AttributeValue) (match.Row, error) {
	pk, _ := item[tabledef.KeyAttribute].(*types.AttributeValueMemberS)
	var reg operations.Registration
	if pk != nil {
		reg, _ = operations.ByRowKey(pk.Value)
	}
	status, _ := item[tabledef.StatusAttribute].(*types.AttributeValueMemberS)
	currency, _ := item[tabledef.CurrencyAttribute].(*types.AttributeValueMemberS)
	if reg.Name == "" || status == nil || currency == nil {
		return match.Row{}, errors.New("a row without its key, status or currency")
	}
	var written time.Time // zero: the row was written before the day index existed
	if at, ok := item[tabledef.DayAtAttribute].(*types.AttributeValueMemberN); ok {
		ms, err := strconv.ParseInt(at.Value, 10, 64)
		if err != nil {
			return match.Row{}, fmt.Errorf("%s: %w", tabledef.DayAtAttribute, err)
		}
		written = time.UnixMilli(ms).UTC()
	}
	var amount amount
	if err := amount.UnmarshalDynamoDBAttributeValue(item[tabledef.AmountAttribute]); err != nil {
		return match.Row{}, err
	}
	row := match.Row{
		ID: strings.TrimPrefix(pk.Value, reg.RowKeyPrefix), Operation: reg.Name,
		Terms: match.Terms{Status: status.Value, Amount: int64(amount), Currency: currency.Value}, At: written,
	}
	row.ChargeID = row.ID
	if c, ok := item[tabledef.ChargeIDAttribute].(*types.AttributeValueMemberS); ok {
		row.ChargeID = c.Value
	}
	return row, nil
}

// Row implements match.Books with one strongly consistent GetItem of what
// the day index projects: found false when nothing or a marker stands at
// the row's key.
func (b *MatchBooks) Row(ctx context.Context, id string) (match.Row, bool, error) {
	reg, ok := operations.ByRowID(id)
	if !ok {
		return match.Row{}, false, nil
	}
	names := map[string]string{"#t": tabledef.TypeAttribute}
	projection := "#t"
	for i, a := range append([]string{tabledef.KeyAttribute, tabledef.DayAtAttribute}, tabledef.DayProjected()...) {
		n := "#p" + strconv.Itoa(i)
		names[n] = a
		projection += ", " + n
	}
	out, err := b.t.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(b.t.name), Key: pkKey(reg.RowKeyPrefix + id), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String(projection), ExpressionAttributeNames: names,
	})
	if err != nil {
		return match.Row{}, false, fmt.Errorf("match: row %s: %w", id, err)
	}
	if typ, _ := out.Item[tabledef.TypeAttribute].(*types.AttributeValueMemberS); typ == nil || typ.Value != rowTypeOf(reg) {
		return match.Row{}, false, nil
	}
	row, err := matchRowOf(out.Item)
	return row, err == nil, err
}

// rowTypeOf is the type of reg's rows' items (tabledef.Rows).
func rowTypeOf(reg operations.Registration) string {
	for _, r := range tabledef.Rows() {
		if r.Prefix == reg.RowKeyPrefix {
			return r.Type
		}
	}
	return ""
}

// Charge implements match.Books: the charge's row and its balance, two
// strongly consistent reads, as its GET reads them (charge.FiguresOf).
func (b *MatchBooks) Charge(ctx context.Context, id string) (match.Figures, bool, error) {
	ch, err := b.t.Ledger().Get(ctx, id)
	if errors.Is(err, charge.ErrNoCharge) {
		return match.Figures{}, false, nil
	}
	if err != nil {
		return match.Figures{}, false, err
	}
	bal, err := b.t.Captures().Get(ctx, id)
	if err != nil {
		return match.Figures{}, false, err
	}
	// At the row's own time, so FiguresOf never closes it by its expiry:
	// what it captured and refunded does not depend on the clock.
	f := charge.FiguresOf(ch, charge.Balance{Opened: bal.Authorized > 0, Captured: bal.Captured, Capturable: bal.Capturable,
		Closed: string(bal.Closed), Refunded: bal.Refunded}, ch.CreatedAt)
	out := match.Figures{Captured: f.Captured, Refunded: f.Refunded}
	if ch.Status != acquirer.StatusDeclined {
		out.Authorized = ch.Amount
	}
	return out, true, nil
}

// sinceKey is the key of the item that keeps the first day matched.
const sinceKey = tabledef.MatchPrefix + "since"

// Since implements match.Books: a strongly consistent GetItem of the
// first day matched, and, when none is kept, one PutItem of today
// conditioned on its absence (the first run's; a run that lost that race
// reads the winner's).
func (b *MatchBooks) Since(ctx context.Context, today time.Time) (time.Time, error) {
	item, err := getItem(ctx, b.t.api, b.t.name, sinceKey)
	if err == nil && item == nil {
		err = retryWrite(ctx, func() error {
			_, err := b.t.api.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(b.t.name),
				Item: map[string]types.AttributeValue{
					tabledef.KeyAttribute: &types.AttributeValueMemberS{Value: sinceKey}, matchSince: millis(acquirer.DayOf(today)),
				},
				ConditionExpression:                 aws.String("attribute_not_exists(" + tabledef.KeyAttribute + ")"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			return err
		})
		var lost *types.ConditionalCheckFailedException
		switch {
		case errors.As(err, &lost):
			item, err = lost.Item, nil
		case err == nil:
			return acquirer.DayOf(today), nil
		}
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("match: the first day matched: %w", err)
	}
	if n, ok := item[matchSince].(*types.AttributeValueMemberN); ok {
		if ms, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
			return time.UnixMilli(ms).UTC(), nil
		}
	}
	return time.Time{}, errors.New("match: the first day matched does not read")
}

// Claim implements match.Books with one UpdateItem of the day's item,
// conditioned on its being not done and its claim free, expired or
// owner's own; a refused claim returns the item, with its counts.
func (b *MatchBooks) Claim(ctx context.Context, day time.Time, owner string, now, until time.Time) (bool, bool, map[string]int, error) {
	err := retryWrite(ctx, func() error {
		_, err := b.t.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(b.t.name), Key: pkKey(dayKey(day)),
			UpdateExpression:         aws.String("SET #o = :o, #u = :u"),
			ConditionExpression:      aws.String("attribute_not_exists(#d) AND (attribute_not_exists(#u) OR #u < :now OR #o = :o)"),
			ExpressionAttributeNames: map[string]string{"#o": matchOwner, "#u": matchUntil, "#d": matchDone},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":o": &types.AttributeValueMemberS{Value: owner}, ":u": millis(until), ":now": millis(now),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	var refused *types.ConditionalCheckFailedException
	if errors.As(err, &refused) {
		counts := map[string]int{}
		if m, ok := refused.Item[matchCount].(*types.AttributeValueMemberM); ok {
			for kind, v := range m.Value {
				if n, ok := v.(*types.AttributeValueMemberN); ok {
					counts[kind], _ = strconv.Atoi(n.Value)
				}
			}
		}
		return false, refused.Item[matchDone] != nil, counts, nil
	}
	if err != nil {
		return false, false, nil, fmt.Errorf("match: claim %s: %w", day.Format(time.DateOnly), err)
	}
	return true, false, nil, nil
}

// Keep implements match.Books with one PutItem of the line's item,
// conditioned on its key's absence: the key is the day, the line's kind
// and its ref, so a line found again is kept once.
func (b *MatchBooks) Keep(ctx context.Context, day time.Time, l match.Line) (bool, error) {
	body, err := json.Marshal(l)
	if err != nil {
		return false, err
	}
	err = retryWrite(ctx, func() error {
		_, err := b.t.api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(b.t.name),
			Item: map[string]types.AttributeValue{
				tabledef.KeyAttribute:      &types.AttributeValueMemberS{Value: lineKey(day, l)},
				tabledef.DayShardAttribute: &types.AttributeValueMemberS{Value: linesShard(day)},
				tabledef.DayAtAttribute:    millis(l.At),
				matchLine:                  &types.AttributeValueMemberS{Value: string(body)},
			},
			ConditionExpression: aws.String("attribute_not_exists(" + tabledef.KeyAttribute + ")"),
		})
		return err
	})
	var exists *types.ConditionalCheckFailedException
	if errors.As(err, &exists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("match: keep a line of %s: %w", day.Format(time.DateOnly), err)
	}
	return true, nil
}

// lineKeys yields the keys of day's kept lines, from the day index, in
// the order of their time.
func (b *MatchBooks) lineKeys(ctx context.Context, day time.Time) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		var start map[string]types.AttributeValue
		for {
			out, err := b.t.api.Query(ctx, &dynamodb.QueryInput{
				TableName: aws.String(b.t.name), IndexName: aws.String(tabledef.DayIndex),
				KeyConditionExpression:    aws.String(tabledef.DayShardAttribute + " = :s"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: linesShard(day)}},
				ProjectionExpression:      aws.String(tabledef.KeyAttribute),
				ExclusiveStartKey:         start,
			})
			if err != nil {
				yield("", fmt.Errorf("match: the lines of %s: %w", day.Format(time.DateOnly), err))
				return
			}
			for _, item := range out.Items {
				pk, _ := item[tabledef.KeyAttribute].(*types.AttributeValueMemberS)
				if pk == nil {
					continue
				}
				if !yield(pk.Value, nil) {
					return
				}
			}
			if start = out.LastEvaluatedKey; start == nil {
				return
			}
		}
	}
}

// Kept implements match.Books: the keys of day's kept lines, from the
// day index's partition of its lines.
func (b *MatchBooks) Kept(ctx context.Context, day time.Time) (map[string]bool, error) {
	kept := map[string]bool{}
	prefix := dayKey(day) + "#"
	for key, err := range b.lineKeys(ctx, day) {
		if err != nil {
			return nil, err
		}
		kept[strings.TrimPrefix(key, prefix)] = true
	}
	return kept, nil
}

// Lines implements match.Books: day's kept lines, each read by its key.
func (b *MatchBooks) Lines(ctx context.Context, day time.Time) ([]match.Line, error) {
	var lines []match.Line
	for key, err := range b.lineKeys(ctx, day) {
		if err != nil {
			return nil, err
		}
		item, err := getItem(ctx, b.t.api, b.t.name, key)
		if err != nil {
			return nil, fmt.Errorf("match: line %s: %w", key, err)
		}
		body, _ := item[matchLine].(*types.AttributeValueMemberS)
		var l match.Line
		if body == nil {
			return nil, fmt.Errorf("match: line %s: no line", key)
		}
		if err := strictjson.Unmarshal([]byte(body.Value), &l); err != nil {
			return nil, fmt.Errorf("match: line %s: %w", key, err)
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// Finish implements match.Books with one UpdateItem of the day's item,
// conditioned on owner's claim: the counts, and doneAt when not zero;
// the claim freed.
func (b *MatchBooks) Finish(ctx context.Context, day time.Time, owner string, doneAt time.Time, counts map[string]int) error {
	byKind := map[string]types.AttributeValue{}
	for kind, n := range counts {
		byKind[kind] = &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
	}
	update := "SET #c = :c REMOVE #u"
	values := map[string]types.AttributeValue{":o": &types.AttributeValueMemberS{Value: owner}, ":c": &types.AttributeValueMemberM{Value: byKind}}
	names := map[string]string{"#o": matchOwner, "#u": matchUntil, "#c": matchCount}
	if !doneAt.IsZero() {
		update = "SET #c = :c, #d = :d REMOVE #u"
		names["#d"] = matchDone
		values[":d"] = millis(doneAt)
	}
	err := retryWrite(ctx, func() error {
		_, err := b.t.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(b.t.name), Key: pkKey(dayKey(day)), UpdateExpression: aws.String(update),
			ConditionExpression: aws.String("#o = :o"), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("match: finish %s: %w", day.Format(time.DateOnly), err)
	}
	return nil
}

// retryWrite runs one of the match's writes, each conditional, and tries
// it again when it conflicted with another region's write
// (idem.RetryConflicts): a conflicted write had no effect, so the retry
// meets whatever the other region wrote, as the first try would have.
func retryWrite(ctx context.Context, write func() error) error {
	return idem.RetryConflicts(ctx, func() error { return writeError(write()) })
}

// millis is t in epoch milliseconds, as a number.
func millis(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

package dynamotest

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Units are capacity units consumed, as DynamoDB bills them on demand.
type Units struct {
	// TableWrite and IndexWrite are write request units of the table and
	// of its global secondary indexes, Read the read request units.
	TableWrite, IndexWrite, Read float64
	// Computed counts the calls whose units DynamoDB did not report and
	// were computed from item sizes: a write whose condition failed is
	// billed as a write (at least 1 unit) but answers with an error.
	Computed int
}

// Meter is a DynamoDB client that asks every call for its consumed
// capacity (ReturnConsumedCapacity INDEXES) and adds it up. It serves as
// the table's API (dynamo.API).
type Meter struct {
	*dynamodb.Client
	mu    sync.Mutex
	units Units
}

// Take returns the units since the last Take and starts again.
func (m *Meter) Take() Units {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.units
	m.units = Units{}
	return u
}

func (m *Meter) add(c *types.ConsumedCapacity, write bool) {
	if c == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !write {
		m.units.Read += aws.ToFloat64(c.CapacityUnits)
		return
	}
	index := 0.0
	for _, gsi := range c.GlobalSecondaryIndexes {
		index += aws.ToFloat64(gsi.CapacityUnits)
	}
	m.units.IndexWrite += index
	if c.Table != nil {
		m.units.TableWrite += aws.ToFloat64(c.Table.CapacityUnits)
	} else {
		m.units.TableWrite += aws.ToFloat64(c.CapacityUnits) - index
	}
}

// failed adds a write refused by its condition: the larger of the item
// sent and the item found, in 1 KB units.
func (m *Meter) failed(err error, sent map[string]types.AttributeValue) {
	var cond *types.ConditionalCheckFailedException
	if !errors.As(err, &cond) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.units.TableWrite += float64(WriteUnits(max(ItemSize(sent), ItemSize(cond.Item))))
	m.units.Computed++
}

// PutItem implements the APIs.
func (m *Meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.Client.PutItem(ctx, in, opts...)
	if err != nil {
		m.failed(err, in.Item)
		return out, err
	}
	m.add(out.ConsumedCapacity, true)
	return out, nil
}

// UpdateItem implements the APIs.
func (m *Meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.Client.UpdateItem(ctx, in, opts...)
	if err != nil {
		m.failed(err, nil)
		return out, err
	}
	m.add(out.ConsumedCapacity, true)
	return out, nil
}

// DeleteItem implements the APIs.
func (m *Meter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	out, err := m.Client.DeleteItem(ctx, in, opts...)
	if err != nil {
		m.failed(err, nil)
		return out, err
	}
	m.add(out.ConsumedCapacity, true)
	return out, nil
}

// GetItem implements the APIs.
func (m *Meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.Client.GetItem(ctx, in, opts...)
	if err == nil {
		m.add(out.ConsumedCapacity, false)
	}
	return out, err
}

// Query implements the APIs.
func (m *Meter) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.Client.Query(ctx, in, opts...)
	if err == nil {
		m.add(out.ConsumedCapacity, false)
	}
	return out, err
}

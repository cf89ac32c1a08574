package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute and index names of the table. The CDK app builds the table from
// TableInput, so tests, `make run` and AWS use one definition. The item
// layouts' struct tags spell the two attributes too (TestAttributeNames).
const (
	// KeyAttribute is every item's partition key: a record's, a ledger row's.
	KeyAttribute  = "pk"
	InflightIndex = "inflight"
	// TTLAttribute is a record's logical expiry, in epoch seconds.
	TTLAttribute = "expires_at"
)

// TableInput is the one definition of the table: partition key pk, on demand,
// the sparse in-flight index (partition inflight_shard, sort
// lease_expires_at) that only in-progress records appear in, and a stream
// of new and old images, the outbox the outcome events are published from
// (a hold is a change that needs the old image). TTL on expires_at is set
// separately (EnableTTL), as DynamoDB requires.
func TableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(KeyAttribute), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("inflight_shard"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("lease_expires_at"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(KeyAttribute), KeyType: types.KeyTypeHash},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(InflightIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("inflight_shard"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("lease_expires_at"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{
				ProjectionType:   types.ProjectionTypeInclude,
				NonKeyAttributes: []string{"lease_token", "attempt", "stale_at", "reconcile_attempts"},
			},
		}},
	}
}

// CreateTable creates the table from TableInput, waits until it is active
// and, when ttl is set (deploy.TableMode.TTL), enables TTL. A table that
// already exists is left as it is.
func CreateTable(ctx context.Context, client *dynamodb.Client, name string, ttl bool) error {
	_, err := client.CreateTable(ctx, TableInput(name))
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client)
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableWait); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	if !ttl {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable TTL on %s: %w", name, err)
	}
	return nil
}

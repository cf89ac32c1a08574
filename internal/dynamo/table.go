package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TableInput is the definition of a table with TTL (tabledef.Table) as
// CreateTable takes it. TTL is set separately, as DynamoDB requires.
func TableInput(name string) *dynamodb.CreateTableInput { return tableInput(name, tabledef.Table()) }

func tableInput(name string, def tabledef.Definition) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingMode(def.BillingMode),
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(def.StreamView),
		},
		KeySchema: keySchema(def.Partition, tabledef.Attribute{}),
	}
	for _, a := range def.Attributes() {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a.Name), AttributeType: types.ScalarAttributeType(a.Type),
		})
	}
	for _, ix := range def.Indexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  keySchema(ix.Partition, ix.Sort),
			Projection: &types.Projection{ProjectionType: types.ProjectionType(ix.Projection()), NonKeyAttributes: ix.Projected},
		})
	}
	return in
}

// keySchema is a key of partition and, if it is named, sort.
func keySchema(partition, sort tabledef.Attribute) []types.KeySchemaElement {
	out := []types.KeySchemaElement{{AttributeName: aws.String(partition.Name), KeyType: types.KeyTypeHash}}
	if sort.Name != "" {
		out = append(out, types.KeySchemaElement{AttributeName: aws.String(sort.Name), KeyType: types.KeyTypeRange})
	}
	return out
}

// CreateTable creates the table from its definition (tabledef.For ttl),
// waits until it is active and, when ttl is set (deploy.TableMode.TTL),
// enables TTL; without it the table has the expiry index its purge lists.
// A table that already exists is left as it is.
func CreateTable(ctx context.Context, client *dynamodb.Client, name string, ttl bool) error {
	_, err := client.CreateTable(ctx, tableInput(name, tabledef.For(ttl)))
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
			AttributeName: aws.String(tabledef.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable TTL on %s: %w", name, err)
	}
	return nil
}
